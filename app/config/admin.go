package config

import (
	"fmt"
	"strings"
)

// Admin configures access to the admin API and console.
type Admin struct {
	Tokens []Token `yaml:"tokens"`
	// TokensEnv holds tokens as "name:scope:token,..." (for secrets that
	// should not be in the file).
	TokensEnv string `yaml:"-" env:"EVENTCENTER_ADMIN_TOKENS"`
	// Insecure opens the API without tokens (dev only).
	Insecure bool `yaml:"insecure" env:"EVENTCENTER_ADMIN_INSECURE"`
}

// Token is one bearer token.
type Token struct {
	Name  string `yaml:"name"`
	Token string `yaml:"token"`
	// Scope is "read" or "admin".
	Scope string `yaml:"scope"`
	// TokenFile holds the token instead of Token (see security.go).
	TokenFile string `yaml:"token_file"`
}

// validateAdmin checks admin: insecure only on loopback, and the tokens.
func (c *Config) validateAdmin(bad func(string, string, ...any)) {
	if c.Admin.Insecure && len(c.Admin.Tokens) == 0 && c.HTTP.Listen != "" && !LoopbackListen(c.HTTP.Listen) {
		bad("admin.insecure", "opens the admin API without tokens and is refused on http.listen %s, which is reachable from other hosts: configure admin.tokens, or listen on 127.0.0.1", c.HTTP.Listen)
	}
	tokenNames, secrets := map[string]bool{}, map[string]bool{}
	for i, t := range c.Admin.Tokens {
		f := fmt.Sprintf("admin.tokens[%d]", i)
		checkTokenName(bad, f, t.Name, tokenNames)
		checkTokenSecret(bad, f, t.Token, secrets, "same secret as another token")
		if t.Scope != "read" && t.Scope != "admin" {
			bad(f+".scope", "want read or admin, got %q", t.Scope)
		}
	}
}

// checkTokenName reports a token's missing or repeated name (names holds
// the names seen so far; the name is added). Admin and producer tokens
// follow the same rule.
func checkTokenName(bad func(string, string, ...any), field, name string, names map[string]bool) {
	switch {
	case strings.TrimSpace(name) == "":
		bad(field+".name", "is required")
	case names[name]:
		bad(field+".name", "%q is used by another token", name)
	}
	names[name] = true
}

// checkTokenSecret reports a token secret that is too short or repeats
// one seen before (secrets; the secret is added), the latter as repeated
// says. It says whether the secret was fine.
func checkTokenSecret(bad func(string, string, ...any), field, secret string, secrets map[string]bool, repeated string) bool {
	ok := true
	switch {
	case len(secret) < 16:
		bad(field+".token", "must be at least 16 characters")
		ok = false
	case secrets[secret]:
		bad(field+".token", "%s", repeated)
		ok = false
	}
	secrets[secret] = true
	return ok
}
