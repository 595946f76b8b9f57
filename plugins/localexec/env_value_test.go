package localexec

import (
	"regexp"
	"strings"
	"testing"
)

const (
	hexDigits  = "0123456789abcdef"
	upperAlnum = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	letters    = "aBcDeFgHiJkLmNoPqRsTuVwXyZ"
)

// fakeOf is prefix followed by n characters drawn in turn from alphabet:
// like fake, for issuers whose tokens use a narrower alphabet.
func fakeOf(alphabet, prefix string, n int) string {
	return prefix + strings.Repeat(alphabet, n/len(alphabet)+1)[:n]
}

// credentialExamples are values shaped as each issuer shapes its tokens,
// at least one for every entry of credentialShapes.
var credentialExamples = []struct{ kind, value string }{
	{"GitHub classic PAT", fake("ghp_", 36)},
	{"GitHub fine-grained PAT", fake("github_pat_", 82)},
	{"GitLab feed token", fake("glft-", 20)},
	{"GitLab CI job token", "glcbt-64_" + fake("", 20)},
	{"GitLab runner registration", fake("GR1348941", 20)},
	{"npm", fake("npm_", 36)},
	{"PyPI", "pypi-AgEIcHlwaS5vcmc" + fake("", 60)},
	{"RubyGems", fakeOf(hexDigits, "rubygems_", 48)},
	{"Artifactory API key", fake("AKCp", 69)},
	{"Artifactory reference token", fake("cmVmdGtu", 56)},
	{"Sourcegraph", fakeOf(hexDigits, "sgp_", 40)},
	{"ReadMe", fakeOf("abcdef0123456789xyz", "rdme_", 70)},
	{"Pulumi", fakeOf(hexDigits, "pul-", 40)},
	{"Terraform Cloud", fake("", 14) + ".atlasv1." + fake("", 67)},
	{"Vault service token", fake("hvs.", 95)},
	{"Doppler", fake("dp.pt.", 43)},
	{"Prefect", fake("pnu_", 36)},
	{"Databricks", fakeOf(hexDigits, "dapi", 32)},
	{"Atlassian", fake("ATATT3", 186)},
	{"Linear", fake("lin_api_", 40)},
	{"Notion", "ntn_12345678901" + fake("", 35)},
	{"Infracost", fake("ico-", 32)},
	{"Postman", fakeOf(hexDigits, "PMAK-", 24) + fakeOf(hexDigits, "-", 34)},
	{"Sentry user token", fakeOf(hexDigits, "sntryu_", 64)},
	{"Grafana service account", fake("glsa_", 32) + fakeOf(hexDigits, "_", 8)},
	{"Grafana Cloud", fake("glc_", 60)},
	{"Grafana API key", fake("eyJrIjoi", 80)},
	{"Dynatrace", fake("dt0c01.", 24) + fake(".", 64)},
	{"OpenShift", fake("sha256~", 43)},
	{"Scalingo", fake("tk-us-", 48)},
	{"Frame.io", fake("fio-u-", 64)},
	{"Typeform", fake("tfp_", 59)},
	{"SettleMint", fake("sm_pat_", 16)},
	{"Anthropic", fake("sk-ant-api03-", 95)},
	{"OpenAI-compatible", fake("sk-", 48)},
	{"Hugging Face", fake("hf_", 34)},
	{"Hugging Face organization", fakeOf(letters, "api_org_", 34)},
	{"Perplexity", fake("pplx-", 48)},
	{"AWS STS key id", fakeOf(upperAlnum[:24]+"234567", "ABIA", 16)},
	{"Amazon Bedrock", fake("ABSK", 120)},
	{"Google API key", fake("AIza", 35)},
	{"Azure AD client secret", "abc8Q~" + fake("", 34)},
	{"Alibaba Cloud", fake("LTAI", 20)},
	{"DigitalOcean PAT", fakeOf(hexDigits, "dop_v1_", 64)},
	{"Cloudflare Origin CA", fakeOf(hexDigits, "v1.0-", 24) + fakeOf(hexDigits, "-", 146)},
	{"Fly.io", fake("fo1_", 43)},
	{"Fly.io macaroon", fake("fm2_", 120)},
	{"PlanetScale", fake("pscale_pw_", 43)},
	{"Heroku", fake("HRKU-AA", 58)},
	{"Yandex Cloud", fake("AQVN", 36)},
	{"1Password secret key", "A3-" + fakeOf(upperAlnum, "", 6) + "-" + fakeOf(upperAlnum, "", 11) + strings.Repeat("-"+fakeOf(upperAlnum, "", 5), 3)},
	{"1Password service account", fake("ops_eyJ", 250)},
	{"age", fakeOf(upperAlnum, "AGE-SECRET-KEY-1", 58)},
	{"Slack bot token", "xoxb-1234567890-1234567890123-" + fake("", 24)},
	{"Slack app token", "xapp-1-A0123456789-1234567890123-" + fakeOf(hexDigits, "", 64)},
	{"Slack webhook", "https://hooks.slack.com/services/T0A1B2C3D/B0A1B2C3D/" + fake("", 24)},
	{"Discord webhook", "https://discord.com/api/webhooks/1234567890/" + fake("", 68)},
	{"Telegram bot", "1234567890:A" + fake("", 34)},
	{"SendGrid", fake("SG.", 22) + fake(".", 43)},
	{"Brevo", fakeOf(hexDigits, "xkeysib-", 64) + fake("-", 16)},
	{"Twilio", fakeOf(hexDigits, "SK", 32)},
	{"Stripe", fake("sk_live_", 99)},
	{"Square", fake("sq0atp-", 22)},
	{"Shopify", fakeOf(hexDigits, "shpat_", 32)},
	{"Shippo", fakeOf(hexDigits, "shippo_live_", 40)},
	{"Duffel", fake("duffel_test_", 43)},
	{"EasyPost", fake("EZAK", 54)},
	{"Flutterwave", fakeOf("abcdefgh0123456789", "FLWSECK_TEST-", 32)},
	{"Adobe", fake("p8e-", 32)},
	{"Facebook page token", fake("EAAC", 120)},
	{"Facebook app token", "123456789012345|" + fake("", 30)},
	{"X bearer token", strings.Repeat("A", 22) + fake("", 90)},
	{"Mapbox secret token", fake("sk.eyJ", 60) + fake(".", 22)},
	{"Airtable", fake("pat", 14) + fakeOf(hexDigits, ".", 64)},
	{"MaxMind", fake("", 6) + fake("_", 29) + "_mmk"},
	{"JWT", "eyJhbGciOiJIUzI1NiJ9." + fake("eyJ", 40) + "." + fake("", 43)},
	{"JWT without a signature", "eyJhbGciOiJub25lIn0." + fake("eyJ", 40) + "."},
	{"Bearer token", "Authorization: Bearer " + fake("", 40)},
	{"bearer token, alone", "bearer " + fake("", 24)},
	{"private key", "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"},
	{"URL with a password", "amqp://guest:hunter2@rabbit:5672/"},
	{"connection string", "Server=db;Database=app;User Id=app;Password=hunter2;"},
}

// Every kind of credential credentialValue knows is found in a value,
// alone or amid other text, and every shape has an example here.
func TestCredentialValueFindsEachKind(t *testing.T) {
	for _, ex := range credentialExamples {
		for _, v := range []string{ex.value, "x=" + ex.value, "before " + ex.value + " after"} {
			if !credentialValue().MatchString(v) {
				t.Errorf("%s: %q is not taken for a credential", ex.kind, v)
			}
		}
	}
	for _, shape := range credentialShapes {
		re := regexp.MustCompile(`(?:^|[^A-Za-z0-9])(?:` + shape + `)`)
		found := false
		for _, ex := range credentialExamples {
			found = found || re.MatchString(ex.value)
		}
		if !found {
			t.Errorf("no example of %s", shape)
		}
	}
}

// ordinaryValues are values of variables that hold no credential, among
// them some that share a prefix or an alphabet with a token.
var ordinaryValues = []string{
	"/usr/local/go/bin:/home/ada/go/bin:/usr/bin:/bin",
	"/home/ada/.config/gcloud/application_default_credentials.json",
	"en_US.UTF-8", "sk_SK.UTF-8", "Europe/Berlin", "xterm-256color", "Ada Lovelace",
	"1.26.0", "v20.11.1", "1.2.3-rc.1+build.5", "go1.26 linux/amd64", "Python 3.12.1",
	"-Xmx2g -Dfile.encoding=UTF-8", "-mod=mod -trimpath",
	"rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:*.tar=01;31",
	"4b825dc642cb6eb9a060e54bf8d69288fbee4904",
	"sha256:" + strings.Repeat("3f1e9c0a", 8),
	"sha512-" + fake("", 86) + "==",
	"123e4567-e89b-12d3-a456-426614174000",
	"SGVsbG8sIHdvcmxkIQ==",
	"eyJmb28iOiJiYXIiLCJiYXoiOlsxLDIsM119",
	"eyJhbGciOiJIUzI1NiJ9",
	"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + fake("", 43) + " ada@laptop",
	"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + fake("", 300) + " ada@laptop",
	"Bearer", "Bearer authentication", "bearer of bad news", "Bearer realm=\"api\"",
	"--bearer-token-file=/var/run/secrets/kubernetes.io/serviceaccount/token",
	"SG.example.com", "SG.sandbox.internal", "dop_v1_not_a_token",
	"arn:aws:iam::123456789012:role/Deploy", "ASIAPACIFIC", "ip-10-0-0-5.eu-west-1.compute.internal",
	"docker.io/library/golang:1.26@sha256:" + strings.Repeat("ab12", 16),
	"https://api.openai.com/v1", "https://o123456.ingest.sentry.io/4504",
	"patch-release.2026-12-07", "api_organization_settings", "ico-noir",
	"AAAA", "SKIP_TESTS", "EAAC", "p8e-ready", "12345:Action",
}

// Ordinary values, among them some that share a prefix or an alphabet with
// a token, are left alone.
func TestCredentialValueLeavesOrdinaryValues(t *testing.T) {
	for _, v := range ordinaryValues {
		if credentialValue().MatchString(v) {
			t.Errorf("%q is taken for a credential", v)
		}
	}
}
