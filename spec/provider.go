package spec

import (
	"strings"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

// checkProvider reports the settings that model.provider cannot take, each at its key (a stop
// sequence beyond the provider's limit at that sequence), with the message the model adapter
// returns at run time: both come from provider.CheckSettings. Only the presence of a setting
// matters to the rules, so values of the wrong shape (which the schema reports) count as set.
func (b *personaBuilder) checkProvider(t *tnode, m *Model) {
	name := m.Provider.Value
	if name == "" {
		return
	}
	s := chat.ModelSettings{Name: m.Name.Value, Provider: name}
	if m.MaxTokens != nil {
		s.MaxTokens = int(m.MaxTokens.Value)
	}
	var zero float64
	if t.get("temperature") != nil {
		s.Temperature = &zero
	}
	if t.get("top_p") != nil {
		s.TopP = &zero
	}
	for _, st := range m.Stop {
		s.Stop = append(s.Stop, st.Value)
	}
	extra := t.get("extra")
	if extra != nil && extra.kind == ValueMap {
		s.Extra = make(map[string]any, len(extra.keys))
		for _, k := range extra.keys {
			s.Extra[k.str] = nil
		}
	}
	for _, se := range provider.SettingErrors(provider.CheckSettings(name, s)) {
		b.errorf(settingPos(t, se.Setting), "%s", se.Error())
	}
}

// settingPos returns where a provider.SettingError's setting stands in the model mapping t: the
// key of "temperature", "top_p" or "stop"; for "stop" with more sequences than the provider
// takes, the first sequence too many; for "extra.<key>", that key inside extra.
func settingPos(t *tnode, setting string) Pos {
	if k, ok := strings.CutPrefix(setting, "extra."); ok {
		if extra := t.get("extra"); extra != nil {
			if p, ok := keyPos(extra, k); ok {
				return p
			}
		}
	}
	if setting == "stop" {
		if n := t.get("stop"); n != nil && n.kind == ValueList && len(n.items) > provider.MaxChatStopSequences {
			return n.items[provider.MaxChatStopSequences].pos
		}
	}
	if p, ok := keyPos(t, setting); ok {
		return p
	}
	return t.pos
}

// keyPos returns the position of key k in mapping n.
func keyPos(n *tnode, k string) (Pos, bool) {
	if n == nil || n.kind != ValueMap {
		return Pos{}, false
	}
	for _, key := range n.keys {
		if key.str == k {
			return key.pos, true
		}
	}
	return Pos{}, false
}
