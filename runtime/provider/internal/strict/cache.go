package strict

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/tokens"
)

// The prompt-cache rules the cache-honest servers follow, one row per rule, each citing the
// provider documentation it follows. Cache bills a request by them; the tests of cache.go pin
// each row.
//
//	Anthropic — https://platform.claude.com/docs/en/build-with-claude/prompt-caching
//	  A1 prefix     the cache key of a breakpoint is the whole prefix up to and including
//	                its block, in the order tools, system, messages ("Prompt caching caches the
//	                full prefix"); any change before it (a tool, the system prompt, an earlier
//	                message, the model) is a miss
//	  A2 breakpoint nothing is cached without a cache_control marker; the top-level marker
//	                stands for the last cacheable block (automatic caching)
//	  A3 limit      at most 4 markers per request, the top-level one included (checked by
//	                CheckAnthropic: "A maximum of 4 blocks with cache_control may be provided")
//	  A4 lookback   a marker finds an earlier entry at any block boundary up to 20 blocks
//	                before it ("the system automatically checks for cache hits at all previous
//	                content block boundaries", up to about 20 blocks)
//	  A5 minimum    a prefix shorter than the model's minimum cacheable length is not written:
//	                4096 tokens for Claude Opus 4.5, Opus 4.6 and Haiku 4.5; 2048 for Claude
//	                Haiku 3.5 and Haiku 3; 1024 for the other models (Sonnet 4.x, Opus 4 and
//	                4.1, Sonnet 3.7) — see MinCacheTokens ("Cache limitations")
//	  A6 ttl        an entry lives 5 minutes (ttl "5m", the default) or 1 hour (ttl "1h") from
//	                its last write or read; a read refreshes it at no cost; a 1h marker may not
//	                follow a 5m one (checked by CheckAnthropic)
//	  A7 usage      cache_read_input_tokens: the longest prefix read; cache_creation_input_tokens:
//	                the tokens written after it, split by lifetime in cache_creation;
//	                input_tokens: the rest, after the last marker
//	  A8 price      a 5m write costs 1.25x the input price, a 1h write 2x, a read 0.1x
//	                ("Pricing"; see Multipliers)
//
//	OpenAI — https://developers.openai.com/api/docs/guides/prompt-caching, and openai-go
//	v3.98.0's doc comments on prompt_cache_key, prompt_cache_retention and prompt_cache_options
//	  O1 automatic  every prompt of 1024 tokens or more is cached without markers; a request
//	                reads the longest cached prefix of itself
//	  O2 increments cached_tokens is the cached prefix rounded down to 1024 + 128k tokens
//	  O3 routing    requests reach the machine holding a prefix by a hash of the prompt's start
//	                combined with prompt_cache_key: requests of another key (or, without one,
//	                of another start) find nothing
//	  O4 retention  in-memory entries live 5 to 10 minutes of inactivity (this server: 5) and
//	                at most 1 hour; prompt_cache_retention "24h" keeps them 24 hours
//	                (gpt-5.6 and later also take explicit prompt_cache_breakpoint markers;
//	                CheckChat and CheckResponses check them, and this server caches those
//	                prompts as O1 says: the markers only add entries OpenAI would write anyway)
//	  O5 usage      prompt_tokens_details.cached_tokens (Chat Completions),
//	                input_tokens_details.cached_tokens (Responses); prompt_tokens and
//	                input_tokens count cached tokens too
//	  O6 price      cache writes cost the input price; reads are discounted (0.1x on the gpt-5
//	                family, the multiplier Multipliers uses)
//
// Tokens are counted with runtime/tokens (o200k_base). An Anthropic block counts the tokens of
// its content as the wire carries it (text, a tool's definition, a call's name and arguments)
// plus BlockTokens for its framing; an image or a document counts MediaTokens. An OpenAI
// prompt is the token stream of its blocks' canonical JSON (each followed by BlockTokens of
// framing), so a prefix matches token by token, across message boundaries, as OpenAI's does.
const (
	// MaxBreakpoints is the Anthropic limit on cache_control markers per request (row A3).
	MaxBreakpoints = 4
	// Lookback is how many blocks before a marker the Anthropic cache looks for an entry (A4).
	Lookback = 20
	// OpenAIMinTokens is the shortest prompt OpenAI caches, and OpenAIIncrement the step of
	// cached_tokens above it (rows O1, O2).
	OpenAIMinTokens = 1024
	OpenAIIncrement = 128
	// BlockTokens is the framing a block costs on top of its content; MediaTokens what an image
	// or a document costs (about one page or one 1092×1092 image).
	BlockTokens = 3
	MediaTokens = 1600
)

// MinCacheTokens returns the minimum cacheable prefix, in tokens, of an Anthropic model (row
// A5), by its name.
func MinCacheTokens(model string) int {
	m := strings.ToLower(model)
	switch {
	case strings.Contains(m, "opus-4-5"), strings.Contains(m, "opus-4-6"), strings.Contains(m, "haiku-4-5"):
		return 4096
	case strings.Contains(m, "haiku"):
		return 2048
	}
	return 1024
}

// Multipliers are the prices of cached input relative to uncached input (rows A8 and O6):
// Read for a token read from the cache, Write5m and Write1h for a token written to it.
type Multipliers struct {
	Read, Write5m, Write1h float64
}

// Prices returns the multipliers of an API's bill.
func Prices(api API) Multipliers {
	if api == Anthropic {
		return Multipliers{Read: 0.1, Write5m: 1.25, Write1h: 2}
	}
	return Multipliers{Read: 0.1, Write5m: 1, Write1h: 1}
}

// Bill is what one request cost: Usage as the API reports it (InputTokens every input token,
// CacheReadTokens and CacheWriteTokens its parts), Write1h the part of CacheWriteTokens written
// for an hour, and Cost the input billed in uncached-token units at the API's multipliers.
type Bill struct {
	Usage   chat.Usage
	Write1h int64
	Cost    float64
}

// Cache is the prompt cache of one API as the rules above describe it: entries keyed by the
// hash of a prefix (and, on OpenAI, the routing key), each with its expiry. Now is its clock
// (time.Now when nil); tests move it. It is safe for concurrent use.
type Cache struct {
	API API
	Now func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]time.Time
	counts  map[string]int   // token counts of block contents already counted (Anthropic)
	ids     map[string][]int // token ids of block contents already encoded (OpenAI)
}

// block is one unit of a request's prefix, in render order: its canonical content (the
// block's JSON without cache markers, with the role of its message), its tokens, and its
// marker.
type block struct {
	path     string
	key      []byte
	tokens   int
	mark     *anCache
	thinking bool
}

// sequence is a request flattened into blocks, with the top-level marker (Anthropic), the
// routing key (OpenAI) and the model.
type sequence struct {
	model     string
	route     string
	extended  bool
	blocks    []block
	auto      *anCache
	preamble  []byte // what is hashed before the messages (thinking settings)
	prefixEnd int    // blocks before the first message block
}

// Bill computes what body costs and updates the cache: reads refresh the entries they read,
// writes add entries. body must pass the API's checks (Check* first); an error says what it
// could not read.
func (c *Cache) Bill(body []byte) (Bill, error) {
	var seq *sequence
	var err error
	switch c.API {
	case Anthropic:
		seq, err = anthropicBlocks(body)
	case Chat:
		seq, err = chatBlocks(body)
	default:
		seq, err = responsesBlocks(body)
	}
	if err != nil {
		return Bill{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries, c.counts, c.ids = map[[32]byte]time.Time{}, map[string]int{}, map[string][]int{}
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	if c.API != Anthropic {
		return c.billOpenAI(seq, now()), nil
	}
	for i := range seq.blocks {
		b := &seq.blocks[i]
		k := string(b.key)
		n, ok := c.counts[k]
		if !ok {
			n = countBlock(b.key)
			c.counts[k] = n
		}
		b.tokens = n + BlockTokens
	}
	return c.billAnthropic(seq, now()), nil
}

// hashes returns the prefix hash after each block: hashes[i] identifies blocks[:i+1] of the
// model (and route).
func (s *sequence) hashes() [][32]byte {
	out := make([][32]byte, len(s.blocks))
	h := sha256.New()
	h.Write([]byte(s.model + "\x00" + s.route + "\x00"))
	for i, b := range s.blocks {
		if i == s.prefixEnd {
			h.Write(s.preamble)
		}
		h.Write(b.key)
		h.Write([]byte{0})
		copy(out[i][:], h.Sum(nil))
	}
	return out
}

func (c *Cache) billAnthropic(seq *sequence, now time.Time) Bill {
	hs := seq.hashes()
	cum := cumulative(seq.blocks)
	min := MinCacheTokens(seq.model)
	type marker struct {
		at  int
		ttl time.Duration
	}
	var marks []marker
	for i, b := range seq.blocks {
		if b.mark != nil {
			marks = append(marks, marker{i, ttlOf(b.mark)})
		}
	}
	if seq.auto != nil && len(seq.blocks) > 0 {
		last := len(seq.blocks) - 1
		if len(marks) == 0 || marks[len(marks)-1].at != last {
			marks = append(marks, marker{last, ttlOf(seq.auto)})
		}
	}
	read := -1 // the last block of the longest prefix read
	for _, m := range marks {
		for j := m.at; j >= 0 && j > m.at-Lookback; j-- {
			if exp, ok := c.entries[hs[j]]; ok && now.Before(exp) {
				if j > read {
					read = j
				}
				break
			}
		}
	}
	// A read refreshes the entry it read, for the longest lifetime a marker at or after it asks.
	if read >= 0 {
		ttl := 5 * time.Minute
		for _, m := range marks {
			if m.at >= read && m.ttl > ttl {
				ttl = m.ttl
			}
		}
		if exp := now.Add(ttl); exp.After(c.entries[hs[read]]) {
			c.entries[hs[read]] = exp
		}
	}
	var bill Bill
	total := int64(cum[len(cum)-1])
	readTokens := int64(0)
	if read >= 0 {
		readTokens = int64(cum[read+1])
	}
	written := readTokens // the end of what is read or written so far
	for _, m := range marks {
		end := int64(cum[m.at+1])
		if m.at <= read || end < int64(min) {
			continue
		}
		c.entries[hs[m.at]] = now.Add(m.ttl)
		if end > written {
			if m.ttl > 5*time.Minute {
				bill.Write1h += end - written
			}
			bill.Usage.CacheWriteTokens += end - written
			written = end
		}
	}
	bill.Usage.InputTokens = total
	bill.Usage.CacheReadTokens = readTokens
	p := Prices(Anthropic)
	bill.Cost = float64(total-readTokens-bill.Usage.CacheWriteTokens) + p.Read*float64(readTokens) +
		p.Write5m*float64(bill.Usage.CacheWriteTokens-bill.Write1h) + p.Write1h*float64(bill.Write1h)
	return bill
}

// billOpenAI bills an OpenAI request: the prompt is the token stream of its blocks in order
// (each block's content tokens, then BlockTokens of framing), cached at every length of 1024 +
// 128k tokens; a request reads the longest cached length of its own stream (rows O1 to O4).
func (c *Cache) billOpenAI(seq *sequence, now time.Time) Bill {
	ttl := 5 * time.Minute
	if seq.extended {
		ttl = 24 * time.Hour
	}
	var stream []int
	for _, b := range seq.blocks {
		k := string(b.key)
		ids, ok := c.ids[k]
		if !ok {
			ids = tokens.Encode(k)
			c.ids[k] = ids
		}
		stream = append(stream, ids...)
		stream = append(stream, -1, -1, -1)
	}
	// lengths[i] is the hash of the stream's first OpenAIMinTokens + i*OpenAIIncrement tokens.
	var lengths [][32]byte
	h := sha256.New()
	h.Write([]byte(seq.model + "\x00" + seq.route + "\x00"))
	var buf [4]byte
	for i, id := range stream {
		buf = [4]byte{byte(id), byte(id >> 8), byte(id >> 16), byte(id >> 24)}
		h.Write(buf[:])
		if n := i + 1; n >= OpenAIMinTokens && (n-OpenAIMinTokens)%OpenAIIncrement == 0 {
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			lengths = append(lengths, sum)
		}
	}
	read := int64(0)
	for i := len(lengths) - 1; i >= 0; i-- {
		if exp, ok := c.entries[lengths[i]]; ok && now.Before(exp) {
			read = int64(OpenAIMinTokens + i*OpenAIIncrement)
			break
		}
	}
	for _, l := range lengths {
		if exp, ok := c.entries[l]; !ok || exp.Before(now.Add(ttl)) {
			c.entries[l] = now.Add(ttl)
		}
	}
	total := int64(len(stream))
	p := Prices(c.API)
	return Bill{Usage: chat.Usage{InputTokens: total, CacheReadTokens: read}, Cost: float64(total-read) + p.Read*float64(read)}
}

// cumulative returns the token count before each block and after the last: cum[i] is the
// tokens of blocks[:i].
func cumulative(bs []block) []int {
	cum := make([]int, len(bs)+1)
	for i, b := range bs {
		cum[i+1] = cum[i] + b.tokens
	}
	return cum
}

func ttlOf(c *anCache) time.Duration {
	if c.TTL == "1h" {
		return time.Hour
	}
	return 5 * time.Minute
}

// countBlock counts the content of a block's canonical JSON: its strings (texts, names,
// arguments, descriptions) by tokens.Count, an image or a document as MediaTokens.
func countBlock(key []byte) int {
	var v any
	if json.Unmarshal(key, &v) != nil {
		return tokens.Count(string(key))
	}
	n := 0
	var walk func(k string, v any)
	walk = func(k string, v any) {
		switch x := v.(type) {
		case string:
			switch {
			case k == "data" && len(x) > 200, strings.HasPrefix(x, "data:"):
				n += MediaTokens
			case k == "type" || k == "role" || k == "media_type" || k == "id" || k == "tool_use_id" || k == "call_id":
			default:
				n += tokens.Count(x)
			}
		case map[string]any:
			for kk, vv := range x {
				if kk == "input_schema" || kk == "parameters" || kk == "input" {
					raw, _ := json.Marshal(vv)
					n += tokens.Count(string(raw))
					continue
				}
				walk(kk, vv)
			}
		case []any:
			for _, e := range x {
				walk(k, e)
			}
		}
	}
	walk("", v)
	return n
}

// canonical returns raw compacted with every "cache_control" and "prompt_cache_breakpoint"
// key removed, prefixed by role: the identity of a block for the prefix hash.
func canonical(role string, raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return append([]byte(role+":"), raw...)
	}
	v = stripMarks(v)
	b, _ := json.Marshal(v)
	return append([]byte(role+":"), b...)
}

func stripMarks(v any) any {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "cache_control")
		delete(x, "prompt_cache_breakpoint")
		for k, e := range x {
			x[k] = stripMarks(e)
		}
	case []any:
		for i, e := range x {
			x[i] = stripMarks(e)
		}
	}
	return v
}

// markOf returns the cache_control marker of a block's JSON, if any.
func markOf(raw json.RawMessage) *anCache {
	var b struct {
		CacheControl *anCache `json:"cache_control"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return nil
	}
	return b.CacheControl
}

// anthropicBlocks flattens a Messages request: each tool, each system block (a string system
// prompt is one block), each content block of each message (a string content is one block).
func anthropicBlocks(body []byte) (*sequence, error) {
	var req struct {
		Model        string            `json:"model"`
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []json.RawMessage `json:"messages"`
		CacheControl *anCache          `json:"cache_control"`
		Thinking     json.RawMessage   `json:"thinking"`
		ToolChoice   json.RawMessage   `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fail("", "%s", err.Error())
	}
	seq := &sequence{model: req.Model, auto: req.CacheControl}
	add := func(path, role string, raw json.RawMessage) {
		seq.blocks = append(seq.blocks, block{path: path, key: canonical(role, raw), mark: markOf(raw)})
	}
	for i, t := range req.Tools {
		add(at("tools", i), "tool", t)
	}
	content := func(path, role string, raw json.RawMessage) {
		if isString(raw) || !isArray(raw) {
			add(path, role, raw)
			return
		}
		var bs []json.RawMessage
		_ = json.Unmarshal(raw, &bs)
		for k, b := range bs {
			add(at(path, k), role, b)
			var head struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal(b, &head)
			seq.blocks[len(seq.blocks)-1].thinking = head.Type == "thinking" || head.Type == "redacted_thinking"
		}
	}
	if !isNull(req.System) {
		content("system", "system", req.System)
	}
	seq.prefixEnd = len(seq.blocks)
	seq.preamble = append(append([]byte{}, req.Thinking...), req.ToolChoice...)
	for i, m := range req.Messages {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &msg); err != nil {
			return nil, fail(at("messages", i), "%s", err.Error())
		}
		content(at("messages", i)+".content", msg.Role, msg.Content)
	}
	return seq, nil
}

// chatBlocks flattens a chat completion request: each tool, each message.
func chatBlocks(body []byte) (*sequence, error) {
	var req struct {
		Model     string            `json:"model"`
		Tools     []json.RawMessage `json:"tools"`
		Messages  []json.RawMessage `json:"messages"`
		Key       string            `json:"prompt_cache_key"`
		Retention string            `json:"prompt_cache_retention"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fail("", "%s", err.Error())
	}
	seq := &sequence{model: req.Model, extended: req.Retention == "24h"}
	for i, t := range req.Tools {
		seq.blocks = append(seq.blocks, block{path: at("tools", i), key: canonical("tool", t)})
	}
	seq.prefixEnd = len(seq.blocks)
	for i, m := range req.Messages {
		seq.blocks = append(seq.blocks, block{path: at("messages", i), key: canonical("message", m)})
	}
	seq.route = routeOf(req.Key, seq.blocks)
	return seq, nil
}

// responsesBlocks flattens a Responses request: each tool, each input item.
func responsesBlocks(body []byte) (*sequence, error) {
	var req struct {
		Model     string            `json:"model"`
		Tools     []json.RawMessage `json:"tools"`
		Input     json.RawMessage   `json:"input"`
		Key       string            `json:"prompt_cache_key"`
		Retention string            `json:"prompt_cache_retention"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fail("", "%s", err.Error())
	}
	seq := &sequence{model: req.Model, extended: req.Retention == "24h"}
	for i, t := range req.Tools {
		seq.blocks = append(seq.blocks, block{path: at("tools", i), key: canonical("tool", t)})
	}
	seq.prefixEnd = len(seq.blocks)
	var items []json.RawMessage
	if isArray(req.Input) {
		_ = json.Unmarshal(req.Input, &items)
	} else {
		items = []json.RawMessage{req.Input}
	}
	for i, it := range items {
		seq.blocks = append(seq.blocks, block{path: at("input", i), key: canonical("item", it)})
	}
	seq.route = routeOf(req.Key, seq.blocks)
	return seq, nil
}

// routeOf is OpenAI's routing (row O3): the key when there is one, else the hash of the
// prompt's first block.
func routeOf(key string, bs []block) string {
	if key != "" {
		return "key:" + key
	}
	if len(bs) == 0 {
		return ""
	}
	sum := sha256.Sum256(bs[0].key)
	return fmt.Sprintf("start:%x", sum[:8])
}

// CacheMarks reads back where a request body of api carries prompt-cache markers, as
// providertest.Adapter.CacheMarks describes: per marker the text of its element (a tool's name
// for a marked tool; the last block's text for Anthropic's top-level marker) and the
// prompt_cache_key ("" on Anthropic).
func CacheMarks(api API, body []byte) (key string, marks []string, err error) {
	textOf := func(raw []byte) string {
		var b struct {
			Text string `json:"text"`
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &b) == nil {
			if b.Text != "" {
				return b.Text
			}
			return b.Name
		}
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	if api == Anthropic {
		seq, err := anthropicBlocks(body)
		if err != nil {
			return "", nil, err
		}
		for _, b := range seq.blocks {
			if b.mark != nil {
				marks = append(marks, textOf(b.key[strings.IndexByte(string(b.key), ':')+1:]))
			}
		}
		if seq.auto != nil && len(seq.blocks) > 0 {
			last := seq.blocks[len(seq.blocks)-1]
			marks = append(marks, textOf(last.key[strings.IndexByte(string(last.key), ':')+1:]))
		}
		return "", marks, nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return "", nil, err
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if _, ok := x["prompt_cache_breakpoint"]; ok {
				t, _ := x["text"].(string)
				marks = append(marks, t)
			}
			for _, k := range []string{"messages", "input", "content", "output"} {
				if e, ok := x[k]; ok {
					walk(e)
				}
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	if m, ok := v.(map[string]any); ok {
		key, _ = m["prompt_cache_key"].(string)
	}
	return key, marks, nil
}
