package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/kairos-sh/kairos/callback"
	"github.com/kairos-sh/kairos/internal/rdb"
)

// DevTenant is the tenant of the embedded dev mode's admin token, whose
// signing secret the banner shows and the dev secrets file keeps.
const DevTenant = "admin"

// devSecrets are what the embedded dev mode keeps across restarts in
// Config.DevSecretsFile: the secret that signs API tokens (unless
// KAIROS_AUTH_SECRET is set), so that a token printed before a restart
// still works, and DevTenant's callback signing secrets, so that a
// receiver given them before a restart still accepts its callbacks.
type devSecrets struct {
	AuthSecret     string `json:"auth_secret"`
	SigningCurrent string `json:"signing_current"`
	SigningNext    string `json:"signing_next"`
}

// devSecretsPath is where the embedded dev mode keeps its secrets:
// kairos/dev-secrets.json in the user's configuration directory, as
// os.UserConfigDir finds it but read through getenv ($XDG_CONFIG_HOME,
// else ~/.config, on Linux). "" when there is none (no $HOME): the
// secrets are then made anew at each start.
func devSecretsPath(getenv func(string) string) string {
	var dir string
	switch runtime.GOOS {
	case "windows":
		dir = getenv("AppData")
	case "darwin", "ios":
		if h := getenv("HOME"); h != "" {
			dir = filepath.Join(h, "Library", "Application Support")
		}
	case "plan9":
		if h := getenv("home"); h != "" {
			dir = filepath.Join(h, "lib")
		}
	default:
		dir = getenv("XDG_CONFIG_HOME")
		if !filepath.IsAbs(dir) {
			dir = ""
			if h := getenv("HOME"); h != "" {
				dir = filepath.Join(h, ".config")
			}
		}
	}
	if !filepath.IsAbs(dir) {
		return ""
	}
	return filepath.Join(dir, "kairos", "dev-secrets.json")
}

// loadDevSecrets reads the secrets kept at path, or makes them and writes
// them there (mode 0600, in a folder of mode 0700) when the file does not
// exist yet.
func loadDevSecrets(path string) (devSecrets, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		var s devSecrets
		if err := json.Unmarshal(b, &s); err != nil || s.AuthSecret == "" || s.SigningCurrent == "" || s.SigningNext == "" {
			return devSecrets{}, fmt.Errorf("dev secrets %s: not what kairos wrote there; remove the file and kairos makes new secrets", path)
		}
		return s, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return devSecrets{}, fmt.Errorf("dev secrets: %w", err)
	}
	s := devSecrets{AuthSecret: newAuthSecret()}
	if s.SigningCurrent, err = callback.NewSecret(); err != nil {
		return devSecrets{}, err
	}
	if s.SigningNext, err = callback.NewSecret(); err != nil {
		return devSecrets{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return devSecrets{}, fmt.Errorf("dev secrets: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return loadDevSecrets(path) // another kairos made it meanwhile
	}
	if err != nil {
		return devSecrets{}, fmt.Errorf("dev secrets: %w", err)
	}
	if err := writeDevSecrets(f, s); err != nil {
		os.Remove(path)
		return devSecrets{}, fmt.Errorf("dev secrets: %w", err)
	}
	return s, nil
}

func writeDevSecrets(f *os.File, s devSecrets) error {
	b, _ := json.MarshalIndent(s, "", "  ")
	_, err := f.Write(append(b, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// saveDevSecrets replaces the file at path with s (a rotation of the
// signing secrets through the API), by a rename so that a reader never
// sees half a file.
func saveDevSecrets(path string, s devSecrets) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".dev-secrets-*")
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := writeDevSecrets(f, s); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}

// newAuthSecret makes a secret to sign API tokens with.
func newAuthSecret() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}

// keepDevSigningKeys gives DevTenant's signing secrets of the file to the
// embedded Redis, fresh at each start, and returns the func that writes
// them back at stop when they were rotated meanwhile.
func keepDevSigningKeys(ctx context.Context, store *rdb.Store, path string, s devSecrets) (save func(context.Context) error, err error) {
	if err := store.SetSigningKeys(ctx, DevTenant, rdb.SigningKeys{Current: s.SigningCurrent, Next: s.SigningNext}); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		k, err := store.GetSigningKeys(ctx, DevTenant)
		if err != nil {
			return err
		}
		if k.Current == s.SigningCurrent && k.Next == s.SigningNext {
			return nil
		}
		s.SigningCurrent, s.SigningNext = k.Current, k.Next
		return saveDevSecrets(path, s)
	}, nil
}
