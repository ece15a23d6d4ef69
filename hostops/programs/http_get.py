# A GET on the host where it has no curl (hostops.http_on_host.http_get): argv[1]
# the URL, argv[2] the timeout in seconds, the API key on stdin (never in argv, where `ps`
# would show it). Prints the body, then the HTTP status on a last line (000: no answer).
import sys
import urllib.request
import urllib.error

req = urllib.request.Request(sys.argv[1])
key = sys.stdin.read().strip()
if key:
    req.add_header("Authorization", "Bearer " + key)
try:
    with urllib.request.urlopen(req, timeout=float(sys.argv[2])) as r:
        sys.stdout.write(r.read().decode(errors="replace") + "\n" + str(r.status))
except urllib.error.HTTPError as e:
    sys.stdout.write("\n" + str(e.code))
except Exception as e:
    sys.stdout.write(str(e) + "\n000")
