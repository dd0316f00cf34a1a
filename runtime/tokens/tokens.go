// Package tokens estimates how many tokens a text costs, offline: it counts with OpenAI's
// o200k_base encoding (the tokenizer of the gpt-4o, gpt-4.1 and gpt-5 families), read from the
// encoding file that github.com/pkoukk/tiktoken-go-loader embeds, so nothing is downloaded.
//
// Start from Count, the tokens a text costs; Encode returns the tokens themselves.
//
// For OpenAI models the count of a text is exact; a request costs a few tokens more per
// message for the API's framing. Anthropic publishes no offline tokenizer for Claude (its
// token-counting endpoint needs the network), so for Claude models the count is an estimate:
// the same text usually costs Claude's tokenizer somewhat more tokens than o200k_base. `personagen
// render` and `diff` report this estimate, and the cache-honest fake APIs
// (runtime/provider/fakeapi) bill with it.
//
// The encoding is loaded on first use (about 0.3 s, a few tens of megabytes); Count is safe for
// concurrent use.
package tokens

import (
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding names the encoding Count uses.
const Encoding = "o200k_base"

var (
	once sync.Once
	enc  *tiktoken.Tiktoken
	err  error
)

func load() {
	tiktoken.SetBpeLoader(loader.NewOfflineLoader())
	enc, err = tiktoken.GetEncoding(Encoding)
}

// Count returns the number of o200k_base tokens of s (special-token text such as
// "<|endoftext|>" counts as ordinary text). It panics only if the embedded encoding file cannot
// be read, which a build of this package cannot produce.
func Count(s string) int {
	if s == "" {
		return 0
	}
	once.Do(load)
	if err != nil {
		panic("tokens: the embedded " + Encoding + " encoding cannot be loaded: " + err.Error())
	}
	return len(enc.EncodeOrdinary(s))
}

// Encode returns the o200k_base token ids of s, as Count counts them.
func Encode(s string) []int {
	if s == "" {
		return nil
	}
	once.Do(load)
	if err != nil {
		panic("tokens: the embedded " + Encoding + " encoding cannot be loaded: " + err.Error())
	}
	return enc.EncodeOrdinary(s)
}
