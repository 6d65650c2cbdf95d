package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestRedactArgs: every form of credential on a command line, tlsbench's
// own or a captured command's, is hidden (S3CR3T appears nowhere in the
// output), and what holds none comes back unchanged.
func TestRedactArgs(t *testing.T) {
	const s = "S3CR3T"
	tests := []struct {
		name string
		in   []string
		want []string // nil: only that s is gone
	}{
		// tlsbench's own.
		{"tlsbench -H", []string{"tlsbench", "connect", "https://h/", "-H", "Authorization: Bearer " + s}, []string{"tlsbench", "connect", "https://h/", "-H", "Authorization: xxxxx"}},
		{"tlsbench -Hvalue", []string{"tlsbench", "connect", "-HX-Api-Key: " + s}, []string{"tlsbench", "connect", "-HX-Api-Key: xxxxx"}},
		{"tlsbench --header=", []string{"tlsbench", "connect", "--header=Cookie: a=" + s}, []string{"tlsbench", "connect", "--header=Cookie: xxxxx"}},
		{"tlsbench --data", []string{"tlsbench", "connect", "--data", `{"pw":"` + s + `"}`}, []string{"tlsbench", "connect", "--data", "xxxxx"}},
		{"tlsbench --command", []string{"tlsbench", "pool", "--command", "AUTH app " + s}, []string{"tlsbench", "pool", "--command", "AUTH xxxxx xxxxx"}},
		{"tlsbench URL", []string{"tlsbench", "connect", "postgres://app:" + s + "@h/db"}, []string{"tlsbench", "connect", "postgres://app:xxxxx@h/db"}},
		{"tlsbench --via=", []string{"tlsbench", "connect", "--via=ssh://u:" + s + "@h:22"}, []string{"tlsbench", "connect", "--via=ssh://u:xxxxx@h:22"}},
		{"tlsbench libpq", []string{"tlsbench", "connect", "host=h user=app password=" + s + " dbname=app"}, []string{"tlsbench", "connect", "host=h user=app password=xxxxx dbname=app"}},
		{"libpq spaces around =", []string{"tlsbench", "connect", "host=h password = " + s + " dbname=app"}, []string{"tlsbench", "connect", "host=h password = xxxxx dbname=app"}},
		{"libpq space after =", []string{"tlsbench", "connect", "host=h password= " + s}, []string{"tlsbench", "connect", "host=h password= xxxxx"}},
		{"libpq space before =", []string{"tlsbench", "connect", "host=h password =" + s}, []string{"tlsbench", "connect", "host=h password xxxxx"}},
		{"libpq inside a quoted script", []string{"sh", "-c", "psql 'host=h password=" + s + "'"}, []string{"sh", "-c", "psql 'host=h password=xxxxx'"}},
		{"tlsbench --lab mariadb keeps --data", []string{"tlsbench", "connect", "--lab", "mariadb", "--data", s}, []string{"tlsbench", "connect", "--lab", "mariadb", "--data", "xxxxx"}},
		// A captured curl.
		{"wire -- curl -H", []string{"tlsbench", "wire", "--capture", "lo", "--", "curl", "-s", "-H", "Authorization: Bearer " + s, "https://h/"},
			[]string{"tlsbench", "wire", "--capture", "lo", "--", "curl", "-s", "-H", "Authorization: xxxxx", "https://h/"}},
		{"curl alone", []string{"/usr/bin/curl", "--header", "Proxy-Authorization: Basic " + s}, []string{"/usr/bin/curl", "--header", "Proxy-Authorization: xxxxx"}},
		{"curl -H token header", []string{"curl", "-H", "X-Auth-Token: " + s, "-H", "Accept: */*"}, []string{"curl", "-H", "X-Auth-Token: xxxxx", "-H", "Accept: */*"}},
		{"curl -u", []string{"curl", "-u", "app:" + s, "https://h/"}, []string{"curl", "-u", "app:xxxxx", "https://h/"}},
		{"curl -uuser:pw", []string{"curl", "-uapp:" + s}, []string{"curl", "-uapp:xxxxx"}},
		{"curl --user", []string{"curl", "--user", "app:" + s}, []string{"curl", "--user", "app:xxxxx"}},
		{"curl -su", []string{"curl", "-su", "app:" + s}, []string{"curl", "-su", "app:xxxxx"}},
		{"curl --proxy-user", []string{"curl", "-U", "p:" + s}, []string{"curl", "-U", "p:xxxxx"}},
		{"curl --oauth2-bearer", []string{"curl", "--oauth2-bearer", s}, []string{"curl", "--oauth2-bearer", "xxxxx"}},
		{"curl -d", []string{"curl", "-d", "user=a&password=" + s, "https://h/"}, []string{"curl", "-d", "xxxxx", "https://h/"}},
		{"curl -d @file", []string{"curl", "-d", "@body.json"}, []string{"curl", "-d", "@body.json"}},
		{"curl -b", []string{"curl", "-b", "session=" + s}, []string{"curl", "-b", "xxxxx"}},
		{"curl -b file", []string{"curl", "-b", "cookies.txt"}, []string{"curl", "-b", "cookies.txt"}},
		{"curl -E cert:pw", []string{"curl", "-E", "client.pem:" + s}, []string{"curl", "-E", "client.pem:xxxxx"}},
		{"curl after --proto https", []string{"curl", "--proto", "https", "-u", "a:" + s}, []string{"curl", "--proto", "https", "-u", "a:xxxxx"}},
		{"URL userinfo", []string{"curl", "https://app:" + s + "@h/"}, []string{"curl", "https://app:xxxxx@h/"}},
		{"URL password=", []string{"curl", "https://h/x?user=a&password=" + s}, []string{"curl", "https://h/x?user=a&password=xxxxx"}},
		{"URL token=", []string{"curl", "https://h/x?token=" + s + "&a=1"}, []string{"curl", "https://h/x?token=xxxxx&a=1"}},
		{"URL access_token=", []string{"curl", "https://h/x?a=1&access_token=" + s}, []string{"curl", "https://h/x?a=1&access_token=xxxxx"}},
		{"URL apikey=", []string{"curl", "https://h/x?apikey=" + s}, []string{"curl", "https://h/x?apikey=xxxxx"}},
		{"URL api_key=", []string{"curl", "https://h/x?api_key=" + s}, []string{"curl", "https://h/x?api_key=xxxxx"}},
		{"URL sslpassword=", []string{"psql", "postgres://u@h/db?sslpassword=" + s}, []string{"psql", "postgres://u@h/db?sslpassword=xxxxx"}},
		{"URL sslkey kept", []string{"psql", "postgres://u@h/db?sslkey=/k.pem"}, []string{"psql", "postgres://u@h/db?sslkey=/k.pem"}},
		{"wget --header=", []string{"wget", "--header=Authorization: Bearer " + s}, []string{"wget", "--header=Authorization: xxxxx"}},
		{"wget --http-password=", []string{"wget", "--http-password=" + s}, []string{"wget", "--http-password=xxxxx"}},
		{"httpie header", []string{"http", "GET", "https://h/", "Authorization:Bearer " + s}, []string{"http", "GET", "https://h/", "Authorization: xxxxx"}},
		{"httpie X-Api-Key", []string{"http", "https://h/", "X-Api-Key:" + s}, []string{"http", "https://h/", "X-Api-Key: xxxxx"}},
		{"httpie -a", []string{"http", "-a", "u:" + s, "https://h/"}, []string{"http", "-a", "u:xxxxx", "https://h/"}},
		{"ab -A", []string{"ab", "-n", "10", "-A", "u:" + s, "https://h/"}, []string{"ab", "-n", "10", "-A", "u:xxxxx", "https://h/"}},
		{"h2load -H", []string{"h2load", "-H", "Authorization: Bearer " + s}, []string{"h2load", "-H", "Authorization: xxxxx"}},
		// Databases.
		{"mysql -p", []string{"mysql", "-uroot", "-p" + s, "-h", "127.0.0.1", "bench"}, []string{"mysql", "-uroot", "-pxxxxx", "-h", "127.0.0.1", "bench"}},
		{"mysql -p alone asks", []string{"mysql", "-u", "root", "-p", "bench"}, []string{"mysql", "-u", "root", "-p", "bench"}},
		{"mysql --password=", []string{"mariadb", "--password=" + s, "-e", "SELECT 1"}, []string{"mariadb", "--password=xxxxx", "-e", "SELECT 1"}},
		{"mysql -h host with p", []string{"mysql", "-hpghost", "-P3306"}, []string{"mysql", "-hpghost", "-P3306"}},
		{"sysbench --mysql-password=", []string{"sysbench", "oltp_read_only", "--mysql-password=" + s, "run"}, []string{"sysbench", "oltp_read_only", "--mysql-password=xxxxx", "run"}},
		{"sysbench --pgsql-password", []string{"sysbench", "--pgsql-password", s, "run"}, []string{"sysbench", "--pgsql-password", "xxxxx", "run"}},
		{"redis-cli -a", []string{"redis-cli", "-h", "127.0.0.1", "-p", "6379", "-a", s, "PING"}, []string{"redis-cli", "-h", "127.0.0.1", "-p", "6379", "-a", "xxxxx", "PING"}},
		{"redis-cli --pass", []string{"redis-cli", "--user", "app", "--pass", s}, []string{"redis-cli", "--user", "app", "--pass", "xxxxx"}},
		{"redis-cli --askpass", []string{"redis-cli", "--askpass", "PING"}, []string{"redis-cli", "--askpass", "PING"}},
		{"redis-cli -u", []string{"redis-cli", "-u", "redis://app:" + s + "@h:6379"}, []string{"redis-cli", "-u", "redis://app:xxxxx@h:6379"}},
		{"redis-cli AUTH", []string{"redis-cli", "-p", "6379", "AUTH", "app", s}, []string{"redis-cli", "-p", "6379", "AUTH", "xxxxx", "xxxxx"}},
		{"redis-benchmark -a", []string{"redis-benchmark", "-a", s, "-t", "get"}, []string{"redis-benchmark", "-a", "xxxxx", "-t", "get"}},
		{"mongosh -p", []string{"mongosh", "-u", "root", "-p", s, "mongodb://h/"}, []string{"mongosh", "-u", "root", "-p", "xxxxx", "mongodb://h/"}},
		{"mongodb URL", []string{"mongosh", "mongodb://root:" + s + "@h:27017/admin"}, []string{"mongosh", "mongodb://root:xxxxx@h:27017/admin"}},
		{"psql conninfo", []string{"psql", "host=h password=" + s + " dbname=app", "-c", "SELECT 1"}, []string{"psql", "host=h password=xxxxx dbname=app", "-c", "SELECT 1"}},
		{"pgbench -p port", []string{"pgbench", "-h", "h", "-p", "5432", "-C", "-S"}, []string{"pgbench", "-h", "h", "-p", "5432", "-C", "-S"}},
		// Environment assignments.
		{"env PGPASSWORD=", []string{"env", "PGPASSWORD=" + s, "psql", "-h", "h"}, []string{"env", "PGPASSWORD=xxxxx", "psql", "-h", "h"}},
		{"env MYSQL_PWD=", []string{"env", "MYSQL_PWD=" + s, "mysql"}, []string{"env", "MYSQL_PWD=xxxxx", "mysql"}},
		{"env REDISCLI_AUTH=", []string{"env", "REDISCLI_AUTH=" + s, "redis-cli"}, []string{"env", "REDISCLI_AUTH=xxxxx", "redis-cli"}},
		{"env GITHUB_TOKEN=", []string{"env", "GITHUB_TOKEN=" + s, "curl"}, []string{"env", "GITHUB_TOKEN=xxxxx", "curl"}},
		{"env value with spaces", []string{"env", "PGPASSWORD=a " + s, "psql"}, []string{"env", "PGPASSWORD=xxxxx", "psql"}},
		{"env keeps the rest", []string{"env", "LANG=C", "PATH=/bin", "psql"}, []string{"env", "LANG=C", "PATH=/bin", "psql"}},
		{"sshpass -p", []string{"sshpass", "-p", s, "ssh", "h"}, []string{"sshpass", "-p", "xxxxx", "ssh", "h"}},
		{"openssl pass:", []string{"openssl", "pkcs12", "-passin", "pass:" + s}, []string{"openssl", "pkcs12", "-passin", "pass:xxxxx"}},
		{"generic --token", []string{"./client", "--token", s, "--n", "3"}, []string{"./client", "--token", "xxxxx", "--n", "3"}},
		{"generic --api-key=", []string{"./client", "--api-key=" + s}, []string{"./client", "--api-key=xxxxx"}},
		{"generic --password before an option", []string{"./client", "--no-password", "-v"}, []string{"./client", "--no-password", "-v"}},
		// Command lines inside arguments.
		{"sh -c PGPASSWORD", []string{"sh", "-c", "PGPASSWORD=" + s + " pgbench -C -S -t 100"}, []string{"sh", "-c", "PGPASSWORD=xxxxx pgbench -C -S -t 100"}},
		{"sh -c quoted PGPASSWORD", []string{"sh", "-c", "PGPASSWORD='a " + s + "' psql"}, []string{"sh", "-c", "PGPASSWORD=xxxxx psql"}},
		{"sh -c export", []string{"bash", "-c", "export PGPASSWORD=" + s + "; psql -h h"}, nil}, // Redact takes "xxxxx;" for a libpq value
		{"sh -c curl -H", []string{"sh", "-c", `curl -s -H "Authorization: Bearer ` + s + `" https://h/ | wc -c`}, []string{"sh", "-c", `curl -s -H 'Authorization: xxxxx' https://h/ | wc -c`}},
		{"sh -c mysql -p", []string{"sh", "-c", "mysql -p" + s + " -e 'SELECT 1'"}, []string{"sh", "-c", "mysql -pxxxxx -e 'SELECT 1'"}},
		{"sh -c redis-cli -a", []string{"sh", "-c", "for i in 1 2; do redis-cli -a " + s + " PING; done"}, []string{"sh", "-c", "for i in 1 2; do redis-cli -a xxxxx PING; done"}},
		{"sh -c $(...)", []string{"sh", "-c", `x=$(curl -u a:` + s + ` https://h/)`}, nil},
		{"nested twice", []string{"sh", "-c", `ssh h "curl -H 'Authorization: Bearer ` + s + `' https://h/"`}, nil},
		{"unbalanced quote", []string{"sh", "-c", `curl -H "Authorization: Bearer ` + s}, []string{"sh", "-c", "xxxxx"}},
		{"sh -c without secret", []string{"sh", "-c", `pgbench -C -S -t 100 "host=h dbname=app"`}, []string{"sh", "-c", `pgbench -C -S -t 100 "host=h dbname=app"`}},
		{"timeout wrapper", []string{"timeout", "10", "curl", "-u", "a:" + s}, []string{"timeout", "10", "curl", "-u", "a:xxxxx"}},
		// Nothing to hide.
		{"plain", []string{"tlsbench", "connect", "builtin", "--tls", "off,1.3", "--key", "rsa2048", "-c", "1,2", "--via", "direct,ssh:aes128-gcm@openssh.com"},
			[]string{"tlsbench", "connect", "builtin", "--tls", "off,1.3", "--key", "rsa2048", "-c", "1,2", "--via", "direct,ssh:aes128-gcm@openssh.com"}},
		{"redis key:1", []string{"redis-cli", "GET", "key:1"}, []string{"redis-cli", "GET", "key:1"}},
		{"tlsbench --filter", []string{"tlsbench", "pool", "mongodb://h/db", "--filter", `{"_id": "user__rand_int__"}`}, []string{"tlsbench", "pool", "mongodb://h/db", "--filter", `{"_id": "user__rand_int__"}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactArgs(tt.in)
			if len(got) != len(tt.in) {
				t.Fatalf("%d arguments for %d: %q", len(got), len(tt.in), got)
			}
			if strings.Contains(strings.Join(got, " "), s) {
				t.Errorf("RedactArgs(%q) = %q: the secret is there", tt.in, got)
			}
			if tt.want != nil && !slices.Equal(got, tt.want) {
				t.Errorf("RedactArgs(%q)\n = %q\nwant %q", tt.in, got, tt.want)
			}
			if again := RedactArgs(got); !slices.Equal(again, got) {
				t.Errorf("not idempotent: %q, then %q", got, again)
			}
			in := slices.Clone(tt.in)
			RedactArgs(in)
			if !slices.Equal(in, tt.in) {
				t.Errorf("RedactArgs changed its argument: %q", in)
			}
		})
	}
}

// FuzzRedactArgs: one string per argument, idempotent, and a password
// after -u user: or in PGPASSWORD= never comes out.
func FuzzRedactArgs(f *testing.F) {
	f.Add("curl\x00-H\x00Authorization: Bearer x\x00https://h/", "sh -c")
	f.Add("sh\x00-c\x00PGPASSWORD='a b' psql", "x")
	f.Add("tlsbench\x00connect\x00host=h password=x", "'")
	f.Fuzz(func(t *testing.T, line, extra string) {
		args := strings.Split(line, "\x00")
		got := RedactArgs(args)
		if len(got) != len(args) {
			t.Fatalf("%d arguments for %d", len(got), len(args))
		}
		if again := RedactArgs(got); !slices.Equal(again, got) {
			t.Fatalf("RedactArgs(%q) = %q, then %q", args, got, again)
		}
		for _, in := range [][]string{
			append(slices.Clone(args), "curl", "-u", "app:"+marker, extra),
			append(slices.Clone(args), "env", "PGPASSWORD="+extra+marker, extra),
			{"sh", "-c", "curl -H 'Authorization: Bearer " + marker + "' " + extra},
		} {
			if r := strings.Join(RedactArgs(in), "\x00"); strings.Contains(r, marker) {
				t.Fatalf("RedactArgs(%q) = %q: the password is there", in, r)
			}
		}
	})
}
