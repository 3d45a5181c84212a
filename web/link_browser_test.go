package web

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kairos-sh/kairos/auth"
)

// TestAdminPageSignsInFromLink: a link with the token in its fragment,
// /#token=… as the dev mode's banner prints it, opens the page signed in;
// the token is kept where a pasted one is and taken out of the address
// bar. A link with a token of another secret ends on the sign-in form with
// the server's reason, and a link followed on the open page signs in too.
func TestAdminPageSignsInFromLink(t *testing.T) {
	base := startKairos(t)
	admin, err := auth.New([]byte(testSecret), nil).Mint("admin", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := auth.New([]byte("the secret of another kairos, 32b"), nil).Mint("admin", true, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, base)
	href := func() string {
		t.Helper()
		s, err := run(b, chromedp.Evaluate[string](`location.href`))
		if err != nil {
			b.fail("read location.href", err)
		}
		return s
	}
	stored := func() string {
		t.Helper()
		s, err := run(b, chromedp.Evaluate[string](`sessionStorage.getItem('kairos.token') || ''`))
		if err != nil {
			b.fail("read sessionStorage", err)
		}
		return s
	}

	b.do("open a link with another secret's token", chromedp.Navigate(base+"/#token="+other))
	b.waitText("#signin-error", "not signed with this server's KAIROS_AUTH_SECRET", 10*time.Second)
	if got := href(); got != base+"/" {
		t.Errorf("after a link with a bad token the address bar shows %q, want %q", got, base+"/")
	}
	if s := stored(); s != "" {
		t.Errorf("a refused token is kept: %q", s)
	}

	b.do("open the banner's link", chromedp.Navigate("about:blank"), chromedp.Navigate(base+"/#token="+admin))
	b.do("see the overview", chromedp.WaitVisible(chromedp.CSS(`[data-testid="overview"]`)))
	b.waitText("#identity", "admin: every tenant", 5*time.Second)
	if got := href(); got != base+"/" {
		t.Errorf("signed in from a link, the address bar shows %q, want %q without the token", got, base+"/")
	}
	if s := stored(); s != admin {
		t.Errorf("sessionStorage holds %q, want the link's token", s)
	}
	b.nav("topics")
	b.do("the session outlives the link", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`[data-testid="topics"]`)))

	tenant, err := auth.New([]byte(testSecret), nil).Mint("acme", false, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	b.load("follow a link on the open page", chromedp.Evaluate[chromedp.Void](`location.hash = '#token=' + `+js(tenant)))
	b.waitText("#identity", "tenant acme", 5*time.Second)
	if got := href(); got != base+"/" {
		t.Errorf("after a link on the open page the address bar shows %q, want %q", got, base+"/")
	}
	if s := stored(); s != tenant {
		t.Errorf("sessionStorage holds %q, want the second link's token", s)
	}
}
