"""Secrets in their providers' documented formats, made up for tests (none is or was ever valid), and the
places chats hold them: prose, a code block, JSON, a shell line, a `.env` dump, a tool's output."""

from __future__ import annotations

import random
import string

_random = random.Random(20261128)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
UPPER_B32 = string.ascii_uppercase + "234567"
B64URL = ALNUM + "-_"


def made(alphabet: str, n: int) -> str:
    return "".join(_random.choice(alphabet) for _ in range(n))


def _pem(kind: str) -> str:
    body = "\n".join(made(ALNUM + "+/", 64) for _ in range(6))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def _jwt() -> str:
    return "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + "eyJ" + made(ALNUM, 60) + "." + made(B64URL, 43)


# (kind the store reports, the secret): one of each format the product promises to hide.
SECRETS: list[tuple[str, str]] = [
    ("aws-access-token", "AKIA" + made(UPPER_B32, 16)),
    ("github-pat", "ghp_" + made(ALNUM, 36)),
    ("github-fine-grained-pat", "github_pat_" + made(ALNUM, 22) + "_" + made(ALNUM, 59)),
    ("github-oauth", "gho_" + made(ALNUM, 36)),
    ("github-app-token", "ghs_" + made(ALNUM, 36)),
    ("gitlab-pat", "glpat-" + made(ALNUM + "-_", 20)),
    ("slack-bot-token", "xoxb-" + made(string.digits, 12) + "-" + made(string.digits, 13) + "-" + made(ALNUM, 24)),
    (
        "slack-webhook-url",
        "https://hooks.slack.com/services/T" + made(UPPER_B32, 10) + "/B" + made(UPPER_B32, 10) + "/" + made(ALNUM, 24),
    ),
    ("stripe-access-token", "sk_live_" + made(ALNUM, 24)),
    ("openai-api-key", "sk-proj-" + made(ALNUM, 58) + "T3BlbkFJ" + made(ALNUM, 58)),
    ("anthropic-api-key", "sk-ant-api03-" + made(ALNUM, 93) + "AA"),
    ("gcp-api-key", "AIza" + made(ALNUM, 35)),
    ("npm-access-token", "npm_" + made(ALNUM, 36)),
    ("pypi-upload-token", "pypi-AgEIcHlwaS5vcmc" + made(ALNUM, 60)),
    ("huggingface-access-token", "hf_" + made(string.ascii_letters, 34)),
    ("sendgrid-api-token", "SG." + made(ALNUM, 22) + "." + made(ALNUM, 43)),
    ("digitalocean-pat", "dop_v1_" + made(HEX, 64)),
    ("shopify-access-token", "shpat_" + made(HEX, 32)),
    ("jwt", _jwt()),
    ("private-key", _pem("RSA PRIVATE KEY")),
    ("private-key", _pem("OPENSSH PRIVATE KEY")),
    ("age-secret-key", "AGE-SECRET-KEY-1" + made("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58)),
    ("url-password", None),  # filled below: a password in a database URL
    ("connection-password", None),
    ("env-secret", None),
    ("quoted-password", None),
    ("generic-api-key", None),
]
_PASSWORD = made(ALNUM, 12) + "!"
_SHORT = "Tr0ub4dor&3x"
SECRETS[SECRETS.index(("url-password", None))] = ("url-password", made(ALNUM, 14))
SECRETS[SECRETS.index(("connection-password", None))] = ("connection-password", _PASSWORD)
SECRETS[SECRETS.index(("env-secret", None))] = ("env-secret", _SHORT)
SECRETS[SECRETS.index(("quoted-password", None))] = ("quoted-password", "pw-" + made(ALNUM, 9))
SECRETS[SECRETS.index(("generic-api-key", None))] = ("generic-api-key", made(LOWER_ALNUM, 32))


def in_context(kind: str, secret: str) -> list[str]:
    """The secret as chats hold it, each a whole message, in every place it is met."""
    if kind == "url-password":
        url = f"postgres://app:{secret}@db.internal:5432/shop"
        return [
            f"The app connects with {url} and times out after 30 s.",
            f"```python\nengine = create_engine('{url}')\n```",
            f'{{"database": {{"url": "{url}", "pool": 5}}}}',
            f"$ psql {url} -c 'select 1'",
            f"DATABASE_URL={url}\nREDIS_URL=redis://localhost:6379/0",
            f"Tool output (Bash):\n  connecting to {url}\n  ok",
        ]
    if kind == "connection-password":
        odbc = f"Server=tcp:sql.example.net,1433;Database=shop;User Id=app;Password={secret};Encrypt=yes;"
        return [
            f"Our connection string is {odbc} and it fails with a timeout.",
            f'```csharp\nvar conn = new SqlConnection("{odbc}");\n```',
            f'{{"ConnectionStrings": {{"Shop": "{odbc}"}}}}',
            f"$ curl 'https://api.example.net/login?user=app&password={secret}&next=/'",
            f'SHOP_DB="{odbc}"',
            f'Tool output (Read appsettings.json):\n  "Shop": "{odbc}"',
        ]
    if kind == "env-secret":
        return [
            f"I set it as\nDB_PASSWORD={secret}\nbut the container still cannot log in.",
            f"```bash\nexport DB_PASSWORD={secret}\ndocker compose up\n```",
            f"```yaml\nenvironment:\n  - DB_PASSWORD={secret}\n```",
            f"$ export DB_PASSWORD='{secret}'",
            f"# .env\nDEBUG=false\nDB_PASSWORD={secret}\nPORT=8080",
            f"Tool output (Read .env):\n     1\tDB_USER=app\n     2\tDB_PASSWORD={secret}\n     3\tDB_HOST=db",
        ]
    if kind == "quoted-password":
        return [
            f'In config.yaml I have password: "{secret}" under the db section.',
            f"```python\nclient = Client(user='app', password='{secret}')\n```",
            f'{{"user": "app", "password": "{secret}"}}',
            f"$ mysql --user=app --password='{secret}' shop",
            f'db:\n  user: app\n  password: "{secret}"',
            f'Tool output (Read config.json):\n  "password": "{secret}",',
        ]
    if kind == "generic-api-key":
        return [
            f'The weather service wants api_key = "{secret}" in every request.',
            f'```python\nWEATHER_API_KEY = "{secret}"\n```',
            f'{{"weather": {{"api_key": "{secret}"}}}}',
            f"$ curl 'https://api.weather.example/v1?city=Oslo' -H 'x-api-key: {secret}'",
            f"WEATHER_API_KEY={secret}\nWEATHER_CITY=Oslo",
            f"Tool output (Read settings.py):\n  weather_api_key = '{secret}'",
        ]
    name = kind.upper().replace("-", "_")
    return [
        f"Here is the key you asked about: {secret} (it stopped working yesterday).",
        f'```python\nclient = Client(token="{secret}")\n```',
        f'{{"credentials": {{"value": "{secret}", "kind": "{kind}"}}}}',
        f"$ curl -H 'Authorization: Bearer {secret}' https://api.example.net/v1/me",
        f"# .env\nDEBUG=false\n{name}={secret}\nPORT=8080",
        f"Tool output (Bash: cat ~/.config/tool/credentials):\n  {secret}\n  (1 line)",
    ]
