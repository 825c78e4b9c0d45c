package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/gw-gateway/gw/server/egress"
)

// ErrNotFound is an object the store does not hold.
var ErrNotFound = errors.New("archived object not found")

// Client talks to one destination's bucket.
type Client struct {
	s3     *s3.Client
	bucket string
}

// NewClient is a client of d whose every connection is dialled under the
// egress policy.
func NewClient(d Destination, dialer *egress.Dialer) *Client {
	tr := &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second, ResponseHeaderTimeout: 30 * time.Second}
	region := d.Region
	if region == "" {
		region = "us-east-1"
	}
	ak, sk := d.AccessKeyID, d.SecretAccessKey
	c := s3.New(s3.Options{
		Region: region, BaseEndpoint: aws.String(d.Endpoint), UsePathStyle: d.PathStyle,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk, Source: "gw"}, nil
		}),
		HTTPClient: &http.Client{Transport: tr, Timeout: 60 * time.Second},
		// The writer retries with its own backoff, from the spool.
		RetryMaxAttempts: 1,
		// S3-compatible stores differ on the newer checksums; send and
		// check them only where the API requires them.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return &Client{s3: c, bucket: d.Bucket}
}

// Put writes the object at key (rewriting it if it is there: the same
// request's same bytes).
func (c *Client) Put(ctx context.Context, key string, gz []byte) error {
	_, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key),
		Body: bytes.NewReader(gz), ContentLength: aws.Int64(int64(len(gz))), ContentType: aws.String("application/gzip")})
	return clean(err)
}

// Get reads the object at key, ErrNotFound if there is none.
func (c *Client) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := c.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	if err != nil {
		var nk *types.NoSuchKey
		if errors.As(err, &nk) {
			return nil, ErrNotFound
		}
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NotFound") {
			return nil, ErrNotFound
		}
		return nil, clean(err)
	}
	defer out.Body.Close()
	return io.ReadAll(io.LimitReader(out.Body, maxObject))
}

// Check reaches the bucket (HeadBucket): the warning a setting's save
// answers when it cannot.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.s3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(c.bucket)})
	return clean(err)
}

// List calls fn with every key under prefix, in pages.
func (c *Client) List(ctx context.Context, prefix string, fn func(key string) error) error {
	p := s3.NewListObjectsV2Paginator(c.s3, &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return clean(err)
		}
		for _, o := range page.Contents {
			if err := fn(aws.ToString(o.Key)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Delete removes the object at key.
func (c *Client) Delete(ctx context.Context, key string) error {
	_, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)})
	return clean(err)
}

// CreateBucket makes the bucket (tests, and a store set up by hand).
func (c *Client) CreateBucket(ctx context.Context) error {
	_, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(c.bucket)})
	return clean(err)
}

// clean is err as gw reports it: the store's error code, or the
// transport's failure, never a signed URL or credential.
func clean(err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return fmt.Errorf("object store: %s", ae.ErrorCode())
	}
	var ne net.Error
	if errors.As(err, &ne) {
		var op *net.OpError
		if errors.As(err, &op) {
			return fmt.Errorf("object store unreachable: %v", op.Err)
		}
		return fmt.Errorf("object store unreachable: timeout")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("object store: request failed")
}
