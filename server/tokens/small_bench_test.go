package tokens

import "testing"

func BenchmarkCountRequestSmall(b *testing.B) {
	doc := []byte(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Hello!"}],"temperature":0.7}`)
	b.ReportAllocs()
	for b.Loop() {
		CountRequest(o200k, doc)
	}
}
