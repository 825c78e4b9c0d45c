package providers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/gw-gateway/gw/server/archive/archivetest"
	"github.com/gw-gateway/gw/server/catalog"
	"github.com/gw-gateway/gw/server/providers"
	"github.com/gw-gateway/gw/server/providers/providerstest"
)

// A Bedrock job's create answered ConflictException (a job of that name
// exists: gw's own, whose create answer was lost) is that job, found by
// its name: never a second job, never the lines failed.
func TestBedrockCreateConflictIsTheNamedJob(t *testing.T) {
	store := archivetest.Start(t)
	fake := providerstest.NewBedrock(t, "us-east-1")
	fake.AccessKeyID, fake.SecretAccessKey = archivetest.Access, archivetest.Secret
	fake.UseS3(store.Endpoint())
	creds := aws.Credentials{AccessKeyID: archivetest.Access, SecretAccessKey: archivetest.Secret}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(store.Endpoint()), UsePathStyle: true,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return creds, nil })})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("gw-batches")}); err != nil {
		t.Fatal(err)
	}
	api := providers.NewSet(nil).BatchAPI()
	call := &providers.Call{CredentialID: "cred", BaseURL: fake.BaseURL(), Secret: fake.Secret(),
		UpstreamModel: "global.anthropic.claude-haiku-4-5-20251001-v1:0",
		Settings: providers.Settings{Region: "us-east-1", BatchS3URI: "s3://gw-batches/p/", BatchRoleARN: "arn:aws:iam::123456789012:role/r",
			BatchS3Endpoint: store.Endpoint()}}
	reqs := make([]providers.BatchRequest, providers.BedrockBatchMinRecords)
	for i := range reqs {
		body, _ := json.Marshal(map[string]any{"model": "bedrock/x", "max_tokens": 5, "messages": []any{map[string]any{"role": "user", "content": fmt.Sprint("hi ", i)}}})
		reqs[i] = providers.BatchRequest{CustomID: fmt.Sprint("gw-", i+1), Body: body}
	}
	ctx := context.Background()
	name := providers.BedrockBatchJobName("batch_0123456789abcdef0123456789abcdef", 1)
	uri, err := api.Upload(ctx, catalog.KindBedrock, call, "/v1/messages", name, reqs)
	if err != nil || uri != "s3://gw-batches/p/gw-batch-input/"+name+".jsonl" {
		t.Fatalf("upload: %q %v", uri, err)
	}
	first, err := api.Create(ctx, catalog.KindBedrock, call, "/v1/messages", name, uri, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fake.RefuseRepeatedNames()
	again, err := api.Create(ctx, catalog.KindBedrock, call, "/v1/messages", name, uri, nil, nil)
	if err != nil || again.ID != first.ID || fake.JobsCreated() != 1 {
		t.Fatalf("the repeated create: %+v %v (%d jobs), want %s", again, err, fake.JobsCreated(), first.ID)
	}
}
