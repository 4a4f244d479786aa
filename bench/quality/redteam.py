"""Red team: fake secrets placed as chats and agent logs really hold them, imported through the real CLI,
then every byte of the store outside `archive/` and every output searched for any trace of each.

    uv run python -m bench.quality.redteam [--show 20] [--keep DIR]     # secrets that leave a trace
    uv run python -m bench.quality.redteam --negatives                   # false findings on code and docs
    uv run python -m bench.quality.redteam --worst                       # worst single inputs, redaction on vs off
    uv run python -m bench.quality.redteam --throughput                  # the import alone, in process, on vs off

The set: every kind below (providers' formats, passwords by where they stand) in several of the
contexts below (a `.env` an agent read, curl in a tool call, a service account's JSON, shell history,
prose, Chinese text, a URL, YAML, code, a title, a project folder...), each secret made afresh (none
is or was ever valid), each in its own chat, spread over five formats: plain JSONL, a ChatGPT export,
a Claude.ai export (imported), Claude Code and Codex session logs (synced from a made-up home).

A trace: the secret's random part whole, or (for one of 16 characters or more) any 12 characters of
it in a row, in the store's files (but `archive/`, which keeps the agents' files as they were) or in
the output of `export`, `stats --json`, `recent` and `search`. The same run with `PASTCHATS_REDACT=off`
is the check that the search for traces finds what is there.

`--negatives`: the hard-negative set (the test corpus, this repository's own code and docs cut into
tool-output-sized messages, docs-like lines that name secrets without holding one, and the installed
packages' sources, lockfiles and manifests as `bench/quality/redaction.py` cuts them) scanned by the
redaction itself: findings per 10,000 messages, each printed to judge.

`--worst`: one chat holding a crafted 1 MB message (a base64 PNG, `okta.` repeated, random base64) or
one 166 KB line of curl commands, imported by the CLI in a fresh store with redaction on and off; and
a corpus of ordinary chats for throughput (the CLI's import, embedding included). Each the median of
`--rounds`, on and off taking turns to go first.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import shutil
import statistics
import string
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ahocorasick

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "pastchats"

rng = random.Random(20261207)
ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"


def made(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def password() -> str:
    word = rng.choice(["hunter", "Sunset", "maple", "Orca", "violet", "Tr0ub4dor", "kestrel", "Quartz"])
    return word + made(string.digits, 2) + rng.choice("!#$%&*@") + made(ALNUM, 4)


def pem(kind: str) -> str:
    return f"-----BEGIN {kind}-----\n" + "\n".join(made(B64, 64) for _ in range(8)) + f"\n-----END {kind}-----"


# kind -> (a made secret, the name a program would give it). The secret's random part is the whole
# secret but for fixed prefixes, which are no trace on their own.
KINDS: dict[str, Callable[[], str]] = {
    "aws-access-key": lambda: "AKIA" + made("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    "aws-secret-key": lambda: made(B64, 40),
    "github-pat": lambda: "ghp_" + made(ALNUM, 36),
    "github-fine-grained": lambda: "github_pat_" + made(ALNUM, 22) + "_" + made(ALNUM, 59),
    "github-oauth": lambda: "gho_" + made(ALNUM, 36),
    "github-app": lambda: "ghs_" + made(ALNUM, 36),
    "github-refresh": lambda: "ghr_" + made(ALNUM, 36),
    "gitlab-pat": lambda: "glpat-" + made(B64URL, 20),
    "gitlab-runner": lambda: "glrt-" + made(B64URL, 20),
    "slack-bot": lambda: f"xoxb-{made(string.digits, 12)}-{made(string.digits, 13)}-{made(ALNUM, 24)}",
    "slack-user": lambda: (
        f"xoxp-{made(string.digits, 12)}-{made(string.digits, 12)}-{made(string.digits, 13)}-" + made(HEX, 32)
    ),
    "slack-webhook": lambda: (
        f"https://hooks.slack.com/services/T{made(UPPER, 10)}/B{made(UPPER, 10)}/{made(ALNUM, 24)}"
    ),
    "stripe-live": lambda: "sk_live_" + made(ALNUM, 99),
    "stripe-restricted": lambda: "rk_live_" + made(ALNUM, 24),
    "openai-project": lambda: "sk-proj-" + made(B64URL, 74) + "T3BlbkFJ" + made(B64URL, 74),
    "openai-legacy": lambda: "sk-" + made(ALNUM, 20) + "T3BlbkFJ" + made(ALNUM, 20),
    "anthropic-api": lambda: "sk-ant-api03-" + made(B64URL, 93) + "AA",
    "anthropic-admin": lambda: "sk-ant-admin01-" + made(B64URL, 93) + "AA",
    "anthropic-oauth": lambda: "sk-ant-oat01-" + made(B64URL, 95) + "AA",
    "openrouter": lambda: "sk-or-v1-" + made(HEX, 64),
    "xai": lambda: "xai-" + made(ALNUM, 80),
    "replicate": lambda: "r8_" + made(ALNUM, 37),
    "groq": lambda: "gsk_" + made(ALNUM, 52),
    "deepseek": lambda: "sk-" + made(HEX, 32),
    "google-oauth-secret": lambda: "GOCSPX-" + made(B64URL, 28),
    "google-api-key": lambda: "AIza" + made(B64URL, 35),
    "rsa-private-key": lambda: pem("RSA PRIVATE KEY"),
    "openssh-private-key": lambda: pem("OPENSSH PRIVATE KEY"),
    "pkcs8-private-key": lambda: pem("PRIVATE KEY"),
    "ec-private-key": lambda: pem("EC PRIVATE KEY"),
    "jwt": lambda: "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJ" + made(B64URL, 60) + "." + made(B64URL, 43),
    "npm": lambda: "npm_" + made(ALNUM, 36),
    "pypi": lambda: "pypi-AgEIcHlwaS5vcmc" + made(B64URL, 70),
    "huggingface": lambda: "hf_" + made(string.ascii_letters, 34),
    "sendgrid": lambda: "SG." + made(B64URL, 22) + "." + made(B64URL, 43),
    "twilio-api-key": lambda: "SK" + made(HEX, 32),
    "twilio-auth-token": lambda: made(HEX, 32),
    "discord-bot": lambda: "MTE" + made(ALNUM, 23) + "." + made(B64URL, 6) + "." + made(B64URL, 38),
    "telegram-bot": lambda: "6" + made(string.digits, 9) + ":AA" + made(B64URL, 33),
    "digitalocean": lambda: "dop_v1_" + made(HEX, 64),
    "shopify": lambda: "shpat_" + made(HEX, 32),
    "databricks": lambda: "dapi" + made(HEX, 32),
    "linear": lambda: "lin_api_" + made(ALNUM, 40),
    "postman": lambda: "PMAK-" + made(HEX, 24) + "-" + made(HEX, 34),
    "pulumi": lambda: "pul-" + made(HEX, 40),
    "doppler": lambda: "dp.pt." + made(ALNUM, 43),
    "age": lambda: "AGE-SECRET-KEY-1" + made("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L".upper(), 58),
    "grafana-service-account": lambda: "glsa_" + made(ALNUM, 32) + "_" + made(HEX, 8),
    "terraform-cloud": lambda: made(ALNUM, 14) + ".atlasv1." + made(B64URL, 67),
    "planetscale": lambda: "pscale_tkn_" + made(B64URL, 43),
    "dynatrace": lambda: "dt0c01." + made(UPPER, 24) + "." + made(UPPER, 64),
    "new-relic": lambda: "NRAK-" + made(UPPER, 27),
    "heroku": lambda: "HRKU-AA" + made(B64URL, 58),
    "vault": lambda: "hvs." + made(B64URL, 90),
    "alibaba": lambda: "LTAI" + made(ALNUM, 20),
    "flutterwave": lambda: "FLWSECK_TEST-" + made(HEX, 32) + "-X",
    "prefect": lambda: "pnu_" + made(ALNUM, 36),
    "perplexity": lambda: "pplx-" + made(ALNUM, 48),
    "rubygems": lambda: "rubygems_" + made(HEX, 48),
    "easypost": lambda: "EZAK" + made(ALNUM, 54),
    "mapbox": lambda: "sk.eyJ1Ijoi" + made(ALNUM, 40) + "." + made(B64URL, 22),
    "atlassian": lambda: "ATATT3xFfGF0" + made(B64URL, 171) + "=" + made(HEX, 8),
    "infracost": lambda: "ico-" + made(ALNUM, 32),
    "readme": lambda: "rdme_" + made(HEX, 70),
    "frameio": lambda: "fio-u-" + made(B64URL, 64),
    "square": lambda: "EAAA" + made(B64URL, 60),
    # Passwords, by where they stand: the context gives them away, not their shape.
    "db-password": password,
    "url-password": password,
    "redis-password": password,
    "oracle-password": password,
    "yaml-password": password,
    "curl-password": password,
    "sshpass-password": password,
    "pgpassword": password,
    "mysql-password": password,
    "docker-password": password,
    "prose-password": password,
    "bank-pin": lambda: made(string.digits, 6),
    "bearer-opaque": lambda: made(ALNUM, 40),
    "basic-auth": lambda: base64.b64encode(f"ana:{password()}".encode()).decode(),
    "azure-storage-key": lambda: made(B64, 86) + "==",
    "generic-api-key": lambda: made(ALNUM, 32),
}

# What a secret's environment variable is called, by kind (a `.env`, shell history, YAML key).
VARIABLE = {
    "aws-access-key": "AWS_ACCESS_KEY_ID",
    "aws-secret-key": "AWS_SECRET_ACCESS_KEY",
    "twilio-auth-token": "TWILIO_AUTH_TOKEN",
    "db-password": "DB_PASSWORD",
    "anthropic-oauth": "CLAUDE_CODE_OAUTH_TOKEN",
    "generic-api-key": "API_KEY",
}
PASSWORD_KINDS = {k for k in KINDS if k.endswith(("-password", "-pin")) or k in {"pgpassword"}}
# Formats of random characters alone: only what stands around them shows them for secrets.
CONTEXT_ONLY = {
    "aws-secret-key",
    "twilio-auth-token",
    "generic-api-key",
    "bearer-opaque",
    "basic-auth",
    "azure-storage-key",
}


def variable(kind: str) -> str:
    return VARIABLE.get(kind, kind.upper().replace("-", "_") + ("" if kind in PASSWORD_KINDS else "_TOKEN"))


@dataclass
class Chat:
    """One chat before it is written in a format: what each party said and what tools did."""

    id: str
    title: str
    project: str = "/home/ana/src/shop"
    events: list[tuple[str, Any]] = field(
        default_factory=list
    )  # ("user"|"assistant", text), ("call", (name, args)), ("result", text)


def fixed_prefix(make: Callable[[], str]) -> int:
    """How many leading characters every secret of a kind shares (`ghp_`, a JWT's header): no trace."""
    samples = [make() for _ in range(4)]
    return len(os.path.commonprefix(samples))  # noqa: RUF071 (a common prefix of characters is what is wanted)


@dataclass
class Case:
    kind: str
    secret: str
    context: str
    format: str
    chat: Chat
    prefix: int = 0

    def traces(self) -> list[str]:
        """What would show the secret: its random part, whole or (long) in any 12 characters of it."""
        core = self.secret[self.prefix :]
        if "\n" in core:  # a PEM key: its lines (a JSON string holds them joined by `\\n`)
            core = core.split("\n")[1]
        if len(core) < 16:
            return [core]
        return [core[i : i + 12] for i in range(len(core) - 11)]


def _chat(topic: str, *events: tuple[str, Any], title: str = "", project: str = "/home/ana/src/shop") -> Chat:
    return Chat(f"rt-{uuid.UUID(int=rng.getrandbits(128))}", title or topic, project, list(events))


# Each context: how the secret stands in a chat. (kind, secret, topic) -> Chat
def env_read(kind: str, secret: str, topic: str) -> Chat:
    lines = ["APP_ENV=production", "DB_HOST=db.internal", f"{variable(kind)}={secret}", "LOG_LEVEL=info"]
    body = "\n".join(f"{i + 1:>6}→{line}" for i, line in enumerate(lines))
    return _chat(
        topic,
        ("user", f"why does the {topic} fail on boot? check the env"),
        ("call", ("Read", {"file_path": "/home/ana/src/shop/.env"})),
        ("result", body),
        ("assistant", "The variables look set; the host is internal."),
    )


def curl_call(kind: str, secret: str, topic: str) -> Chat:
    if kind in PASSWORD_KINDS:
        command = f"curl -s -u admin:{secret} https://jenkins.internal/job/{topic.replace(' ', '-')}/api/json"
    else:
        where = topic.replace(" ", "/")
        command = (
            f'curl -sS https://api.example.com/v1/{where} -H "Authorization: Bearer {secret}" '
            '-H "Accept: application/json"'
        )
    return _chat(
        topic,
        ("user", f"call the {topic} endpoint and show me the answer"),
        ("call", ("Bash", {"command": command, "description": "Call the API"})),
        ("result", '{"ok": true, "items": []}'),
        ("assistant", "It answered with an empty list."),
    )


def service_account(kind: str, secret: str, topic: str) -> Chat:
    key = secret.replace("\n", "\\n") + "\\n"
    document = json.dumps(
        {
            "type": "service_account",
            "project_id": "shop-prod",
            "private_key_id": made(HEX, 40),
            "private_key": "__KEY__",
            "client_email": "deploy@shop-prod.iam.gserviceaccount.com",
        },
        indent=2,
    ).replace("__KEY__", key)
    return _chat(
        topic,
        ("user", f"the {topic} job can't authenticate, look at the credentials file"),
        ("call", ("Bash", {"command": "cat deploy/sa.json"})),
        ("result", document),
        ("assistant", "The service account file parses; check the IAM role."),
    )


def prose(kind: str, secret: str, topic: str) -> Chat:
    end = rng.choice([".", ")", "?", "!", ",", ""])
    if kind == "bank-pin":
        said = f"note for the {topic}: my bank PIN is {secret}{end}"
    elif kind in PASSWORD_KINDS:
        said = f"the wifi password is {secret} if the {topic} box asks{end}"
    else:
        said = f"for the {topic} I use this key (don't share it): {secret}{end} does it look valid"
    return _chat(topic, ("user", said), ("assistant", f"Keep that out of the {topic} repository."))


def chinese(kind: str, secret: str, topic: str) -> Chat:
    if kind in PASSWORD_KINDS:
        said = f"{topic} 服务器的密码是 {secret}，帮我检查一下配置"
    else:
        said = f"这是{topic}的密钥：{secret}，请帮我检查一下为什么调用失败。"
    return _chat(topic, ("user", said), ("assistant", "密钥格式看起来正确，请检查权限。"))


def url(kind: str, secret: str, topic: str) -> Chat:
    if kind == "redis-password":
        link = f"redis://:{secret}@cache.internal:6379/0"
    elif kind == "oracle-password":
        link = f"jdbc:oracle:thin:scott/{secret}@db.internal:1521:ORCL"
    elif kind in PASSWORD_KINDS:
        link = f"postgresql://app:{secret}@db.internal:5432/{topic.replace(' ', '_')}"
    else:
        link = f"https://api.example.com/v2/{topic.replace(' ', '-')}?api_key={secret}&format=json"
    return _chat(topic, ("user", f"I connect to {link} and it times out"), ("assistant", "Check the firewall."))


def yaml(kind: str, secret: str, topic: str) -> Chat:
    key = "password" if kind in PASSWORD_KINDS else variable(kind).lower()
    config = f"service: {topic.replace(' ', '-')}\nreplicas: 2\ncredentials:\n  user: deploy\n  {key}: {secret}\n"
    return _chat(
        topic,
        ("user", f"is this config right?\n```yaml\n{config}```"),
        ("assistant", "Indentation is fine; move the credentials to a secret store."),
    )


def shell_history(kind: str, secret: str, topic: str) -> Chat:
    if kind == "sshpass-password":
        line = f"sshpass -p '{secret}' ssh deploy@10.0.0.4"
    elif kind == "pgpassword":
        line = f"PGPASSWORD={secret} psql -h db.internal -U app shop"
    elif kind == "mysql-password":
        line = f"mysql -uroot -p{secret} -h 127.0.0.1 shop"
    elif kind == "docker-password":
        line = f"docker login -u ana -p {secret} registry.example.com"
    else:
        line = f"export {variable(kind)}={secret}"
    history = f"cd ~/src/shop\ngit pull\n{line}\nmake deploy\n"
    return _chat(
        topic,
        ("user", f"what did I run before the {topic} deploy broke?"),
        ("call", ("Bash", {"command": "tail -n 4 ~/.bash_history"})),
        ("result", history),
        ("assistant", "You pulled, set the credentials and deployed."),
    )


def code(kind: str, secret: str, topic: str) -> Chat:
    if kind == "bearer-opaque":
        snippet = f"const r = await fetch(url, {{ headers: {{ Authorization: 'Bearer {secret}' }} }});"
    elif kind == "basic-auth":
        snippet = f'r = requests.get(url, headers={{"Authorization": "Basic {secret}"}})'
    elif kind == "azure-storage-key":
        snippet = (
            f'conn = "DefaultEndpointsProtocol=https;AccountName=shop;AccountKey={secret};'
            'EndpointSuffix=core.windows.net"'
        )
    elif kind in PASSWORD_KINDS:
        snippet = f'db = connect(host="db.internal", user="app", password="{secret}")'
    else:
        snippet = f'client = Client(api_key="{secret}", timeout=30)'
    return _chat(topic, ("user", f"why is this slow?\n```\n{snippet}\n```"), ("assistant", "Reuse the client."))


def tool_call(kind: str, secret: str, topic: str) -> Chat:
    if kind in PASSWORD_KINDS:
        command = f"http --auth admin:{secret} GET https://api.example.com/{topic.replace(' ', '-')}"
    else:
        command = f"http GET https://api.example.com/{topic.replace(' ', '-')} 'Authorization:Bearer {secret}'"
    return _chat(
        topic,
        ("user", f"try the {topic} call with httpie"),
        ("call", ("exec_command", {"cmd": command})),
        ("result", "HTTP/1.1 200 OK\ncontent-type: application/json\n\n{}"),
        ("assistant", "It works with httpie."),
    )


def json_config(kind: str, secret: str, topic: str) -> Chat:
    key = "password" if kind in PASSWORD_KINDS else "token"
    document = json.dumps({"service": topic, "auth": {"user": "deploy", key: secret}, "retries": 3}, indent=2)
    return _chat(topic, ("user", f"the {topic} reads this config:\n{document}"), ("assistant", "Looks valid."))


def title_and_project(kind: str, secret: str, topic: str) -> Chat:
    one_line = secret.split("\n")[0] if "\n" in secret else secret
    return _chat(
        topic,
        ("user", f"rotate {one_line} for the {topic} please"),
        ("assistant", "Rotated."),
        title=f"rotate {one_line}",
        project=f"/home/ana/tmp/{one_line}",
    )


CONTEXTS: dict[str, Callable[[str, str, str], Chat]] = {
    "env-read": env_read,
    "curl-tool-call": curl_call,
    "prose": prose,
    "chinese": chinese,
    "url": url,
    "yaml": yaml,
    "shell-history": shell_history,
    "code": code,
    "httpie-tool-call": tool_call,
    "json-config": json_config,
    "title-project": title_and_project,
    "service-account": service_account,
}
# Where each kind of secret really turns up (a private key is read from a file, a PIN is told).
ONLY = {
    "service-account": {"pkcs8-private-key", "rsa-private-key"},
    # a bare value in a title or a folder's name is a secret only by its format
    "title-project": {k for k in KINDS if not k.endswith("private-key") and k not in PASSWORD_KINDS} - CONTEXT_ONLY,
}
PASSWORD_CONTEXTS = {
    "db-password": ["env-read", "code", "json-config"],
    "url-password": ["url", "prose"],
    "redis-password": ["url"],
    "oracle-password": ["url"],
    "yaml-password": ["yaml", "json-config"],
    "curl-password": ["curl-tool-call", "httpie-tool-call"],
    "sshpass-password": ["shell-history"],
    "pgpassword": ["shell-history"],
    "mysql-password": ["shell-history"],
    "docker-password": ["shell-history"],
    "prose-password": ["prose", "chinese"],
    "bank-pin": ["prose"],
}
FORMATS = ("plain", "chatgpt", "claude-ai", "claude-code", "codex")
TOPICS = ["invoices", "geocoding", "payroll", "newsletter", "telemetry", "billing", "search", "backups"]


def cases(per_kind: int = 4) -> list[Case]:
    made_cases: list[Case] = []
    for n, (kind, make) in enumerate(KINDS.items()):
        if kind in PASSWORD_CONTEXTS:
            contexts = PASSWORD_CONTEXTS[kind]
        else:
            allowed = [c for c in CONTEXTS if kind in ONLY.get(c, {kind})]
            contexts = rng.sample(allowed, min(per_kind, len(allowed)))
            if kind.endswith("private-key"):
                contexts = ["service-account", "shell-history", "prose"]
        prefix = fixed_prefix(make)
        for i, context in enumerate(contexts):
            secret = make()
            topic = f"{TOPICS[(n + i) % len(TOPICS)]} {n}-{i}"
            chat = CONTEXTS[context](kind, secret, topic)
            made_cases.append(Case(kind, secret, context, FORMATS[(n + i) % len(FORMATS)], chat, prefix))
    return made_cases


# ---- the formats ------------------------------------------------------------------------------------

BASE = 1_780_000_000.0


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(t))


def write_plain(chats: list[Chat], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for k, chat in enumerate(chats):
            messages = []
            for what, value in chat.events:
                if what == "call":
                    messages.append({"role": "assistant", "text": f"[tool {value[0]}: {json.dumps(value[1])}]"})
                elif what == "result":
                    messages.append({"role": "tool", "text": value})
                else:
                    messages.append({"role": what, "text": value})
            record = {"id": chat.id, "title": chat.title, "project": chat.project, "messages": messages}
            record["created_at"] = _iso(BASE + k * 60)
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_chatgpt(chats: list[Chat], path: Path) -> None:
    conversations = []
    for k, chat in enumerate(chats):
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
        parent = "root"
        for i, (what, value) in enumerate(chat.events):
            node = f"n{i}"
            if what == "call":
                author, content = (
                    {"role": "assistant"},
                    {
                        "content_type": "code",
                        "text": value[1].get("command") or value[1].get("cmd") or json.dumps(value[1]),
                    },
                )
            elif what == "result":
                author, content = (
                    {"role": "tool", "name": "python"},
                    {"content_type": "execution_output", "text": value},
                )
            else:
                author, content = {"role": what}, {"content_type": "text", "parts": [value]}
            message = {
                "id": node,
                "author": author,
                "create_time": BASE + k * 60 + i,
                "content": content,
                "metadata": {},
            }
            mapping[node] = {"id": node, "message": message, "parent": parent, "children": []}
            mapping[parent]["children"].append(node)
            parent = node
        conversations.append(
            {
                "title": chat.title,
                "create_time": BASE + k * 60,
                "update_time": BASE + k * 60 + 30,
                "conversation_id": chat.id,
                "id": chat.id,
                "current_node": parent,
                "mapping": mapping,
            }
        )
    path.mkdir(parents=True, exist_ok=True)
    (path / "conversations.json").write_text(json.dumps(conversations, ensure_ascii=False), encoding="utf-8")


def write_claude_ai(chats: list[Chat], path: Path) -> None:
    conversations = []
    for k, chat in enumerate(chats):
        messages: list[dict[str, Any]] = []
        for i, (what, value) in enumerate(chat.events):
            when = _iso(BASE + k * 60 + i)
            if what == "user":
                block = {"type": "text", "text": value}
            elif what == "call":
                block = {"type": "tool_use", "id": f"tu{i}", "name": value[0], "input": value[1]}
            elif what == "result":
                block = {
                    "type": "tool_result",
                    "tool_use_id": f"tu{i - 1}",
                    "name": "tool",
                    "content": [{"type": "text", "text": value}],
                    "is_error": False,
                }
            else:
                block = {"type": "text", "text": value}
            sender = "human" if what == "user" else "assistant"
            if messages and messages[-1]["sender"] == sender == "assistant":
                messages[-1]["content"].append(block)
                continue
            messages.append(
                {
                    "uuid": f"{chat.id}-{i}",
                    "sender": sender,
                    "created_at": when,
                    "text": "",
                    "content": [block],
                    "attachments": [],
                    "files": [],
                }
            )
        conversations.append(
            {
                "uuid": chat.id,
                "name": chat.title,
                "summary": "",
                "created_at": _iso(BASE + k * 60),
                "updated_at": _iso(BASE + k * 60 + 30),
                "account": {"uuid": "acc"},
                "project": {"uuid": f"p-{k}", "name": chat.project.rsplit("/", 1)[-1]},
                "chat_messages": messages,
            }
        )
    path.mkdir(parents=True, exist_ok=True)
    (path / "conversations.json").write_text(json.dumps(conversations, ensure_ascii=False), encoding="utf-8")


def write_claude_code(chats: list[Chat], home: Path) -> None:
    for k, chat in enumerate(chats):
        session = str(uuid.UUID(int=rng.getrandbits(128)))
        folder = home / ".claude" / "projects" / "".join(c if c.isalnum() else "-" for c in chat.project)
        folder.mkdir(parents=True, exist_ok=True)
        lines = []
        parent = None
        for i, (what, value) in enumerate(chat.events):
            me = f"00000000-0000-4000-8000-{k:06d}{i:06d}"
            common = {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": chat.project,
                "sessionId": session,
                "version": "2.1.20",
                "gitBranch": "main",
                "uuid": me,
                "timestamp": _iso(BASE + k * 60 + i),
            }
            if what == "user":
                record = {**common, "type": "user", "message": {"role": "user", "content": value}}
            elif what == "result":
                content = [{"tool_use_id": f"toolu_{k}_{i - 1}", "type": "tool_result", "content": value}]
                record = {**common, "type": "user", "message": {"role": "user", "content": content}}
            else:
                block = (
                    {"type": "tool_use", "id": f"toolu_{k}_{i}", "name": value[0], "input": value[1]}
                    if what == "call"
                    else {"type": "text", "text": value}
                )
                message = {
                    "model": "claude-opus-4-5-20251101",
                    "id": f"msg_{k}_{i}",
                    "type": "message",
                    "role": "assistant",
                    "content": [block],
                    "stop_reason": None,
                    "usage": {"input_tokens": 1, "output_tokens": 1},
                }
                record = {**common, "type": "assistant", "message": message}
            lines.append(json.dumps(record, ensure_ascii=False))
            parent = me
        (folder / f"{session}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_codex(chats: list[Chat], home: Path) -> None:
    folder = home / ".codex" / "sessions" / "2026" / "05" / "11"
    folder.mkdir(parents=True, exist_ok=True)
    for k, chat in enumerate(chats):
        session = f"019e1a2b-3c4d-7e5f-8a9b-{k:012d}"
        start = BASE + k * 60
        lines = [
            {
                "timestamp": _iso(start),
                "type": "session_meta",
                "payload": {
                    "id": session,
                    "timestamp": _iso(start),
                    "cwd": chat.project,
                    "originator": "codex_cli_rs",
                    "cli_version": "0.169.0",
                    "source": "cli",
                    "model_provider": "openai",
                },
            },
        ]
        for i, (what, value) in enumerate(chat.events):
            when = _iso(start + i + 1)
            if what == "call":
                arguments = json.dumps({"cmd": value[1].get("command") or value[1].get("cmd") or json.dumps(value[1])})
                payload = {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": arguments,
                    "call_id": f"call_{i}",
                }
            elif what == "result":
                payload = {"type": "function_call_output", "call_id": f"call_{i - 1}", "output": value}
            else:
                kind = "input_text" if what == "user" else "output_text"
                payload = {"type": "message", "role": what, "content": [{"type": kind, "text": value}]}
            lines.append({"timestamp": when, "type": "response_item", "payload": payload})
        name = f"rollout-2026-05-11T07-{k // 60:02d}-{k % 60:02d}-{session}.jsonl"
        (folder / name).write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")


# ---- running the CLI ---------------------------------------------------------------------------------


def environment(user_home: Path, redact: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PASTCHATS_", "CLAUDE_", "CODEX_", "XDG_"))}
    env |= {
        "PASTCHATS_USER_HOME": str(user_home),
        "HOME": str(user_home),
        "PASTCHATS_REDACT": "on" if redact else "off",
    }
    env.setdefault("FASTEMBED_CACHE_PATH", str(ROOT.parent.parent / "shared" / "fastembed_cache"))
    return env


def cli(store: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [str(CLI), "--home", str(store), *args], env=env, capture_output=True, text=True, timeout=1800
    )
    if done.returncode != 0:
        raise SystemExit(f"pastchats {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


def import_all(work: Path, all_cases: list[Case], redact: bool) -> tuple[Path, str]:
    """Write every case in its format under `work`, import them into a fresh store: (store, outputs)."""
    sources, user_home, store = work / "sources", work / "user", work / "store"
    for path in (sources, user_home, store):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    by_format = {f: [c.chat for c in all_cases if c.format == f] for f in FORMATS}
    write_plain(by_format["plain"], sources / "plain.jsonl")
    write_chatgpt(by_format["chatgpt"], sources / "chatgpt")
    write_claude_ai(by_format["claude-ai"], sources / "claude")
    write_claude_code(by_format["claude-code"], user_home)
    write_codex(by_format["codex"], user_home)
    env = environment(user_home, redact)
    out = [
        cli(store, env, "import", str(sources / "plain.jsonl")),
        cli(store, env, "import", str(sources / "chatgpt")),
        cli(store, env, "import", str(sources / "claude")),
        cli(store, env, "sync"),
        cli(store, env, "export"),
        cli(store, env, "stats", "--json"),
        cli(store, env, "recent", "-n", "20"),
    ]
    for topic in TOPICS:
        out.append(cli(store, env, "search", topic))
    return store, "\n".join(out)


def store_bytes(store: Path) -> bytes:
    return b"\n".join(
        p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file() and "archive" not in p.relative_to(store).parts
    )


def traced(all_cases: list[Case], haystacks: list[bytes]) -> dict[int, list[str]]:
    """Per case (by index), where a trace of its secret was found."""
    automaton = ahocorasick.Automaton()
    for index, case in enumerate(all_cases):
        for piece in case.traces():
            automaton.add_word(piece, (*automaton.get(piece, ()), index))
    automaton.make_automaton()
    found: dict[int, list[str]] = {}
    for name, data in zip(("store", "outputs"), haystacks, strict=True):
        text = data.decode("utf-8", "replace")
        for _, indexes in automaton.iter(text):
            for index in indexes:
                if name not in found.setdefault(index, []):
                    found[index].append(name)
    return found


def red_team(args: argparse.Namespace) -> None:
    all_cases = cases()
    kinds = {c.kind for c in all_cases}
    contexts = {c.context for c in all_cases}
    print(
        f"{len(all_cases)} fake secrets of {len(kinds)} kinds in {len(contexts)} contexts across {len(FORMATS)} formats"
    )
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pastchats-redteam-"))
    try:
        results = {}
        for redact in (False, True):
            started = time.perf_counter()
            store, outputs = import_all(work / ("on" if redact else "off"), all_cases, redact)
            found = traced(all_cases, [store_bytes(store), outputs.encode("utf-8")])
            results[redact] = found
            label = "redaction on " if redact else "redaction off"
            clean = len(all_cases) - len(found)
            seconds = time.perf_counter() - started
            print(f"{label}: {clean}/{len(all_cases)} leave no trace ({clean / len(all_cases):.1%}), {seconds:.0f} s")
        leaks = results[True]
        by_where = Counter(c.context for i, c in enumerate(all_cases) if i in leaks)
        by_format = Counter(c.format for i, c in enumerate(all_cases) if i in leaks)
        if leaks:
            print(f"  traces by context: {dict(by_where)}; by format: {dict(by_format)}")
            for index in list(leaks)[: args.show]:
                case = all_cases[index]
                where = ", ".join(leaks[index])
                print(f"    {case.kind} in {case.context} ({case.format}), found in {where}: {case.secret[:60]!r}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


# ---- hard negatives -----------------------------------------------------------------------------------

SLICE = 6_000
DOCS_LIKE = [
    "ERRORTOKEN = token.ERRORTOKEN",
    "docker run -e POSTGRES_PASSWORD=postgres -e PASSWORD=nodejs node:20",
    "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "Set `OPENAI_API_KEY=sk-...` and `ANTHROPIC_API_KEY=<your key>` before running.",
    "The password is required; the password must be at least 12 characters; reset your password here.",
    "curl -u $USER:$TOKEN https://api.example.com && mysql -u root -p && docker login --password-stdin",
    "Authorization: Bearer <token>\nAuthorization: Bearer YOUR_API_KEY\nheaders = {'Authorization': f'Bearer {token}'}",
    "password: ${DB_PASSWORD}\ntoken: !secret api_token\napi_key: <set-me>\n",
    "If the PIN is entered wrongly 3 times the card locks. The PIN is 4 to 6 digits.",
    "def login(username: str, password: str) -> Token:\n    if password is None:\n        raise AuthError",
    "redis://localhost:6379/0  postgres://localhost/app  mongodb://mongo:27017",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  pkg-1.0.tar.gz",
]


def negatives(limit: int) -> Iterator[str]:
    """Code-heavy chats without a secret: the test corpus, this repository's code and docs, docs-like lines."""
    corpus = ROOT / "tests" / "fixtures" / "corpus" / "chats.jsonl"
    for line in corpus.read_text(encoding="utf-8").splitlines():
        for message in json.loads(line).get("messages", []):
            yield message.get("text") or message.get("content") or ""
    made_slices = 0
    skip = ("redaction", "fixtures", ".git", ".venv", "__pycache__")
    for path in sorted(ROOT.rglob("*")):
        if made_slices >= limit:
            break
        if path.suffix not in {".py", ".md", ".toml", ".json", ".yml", ".yaml", ".txt"} or not path.is_file():
            continue
        if any(part in skip for part in path.relative_to(ROOT).parts) or path.name == "uv.lock":
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for start in range(0, len(text), SLICE):
            yield text[start : start + SLICE]
            made_slices += 1
    yield from DOCS_LIKE
    # ...and what coding agents read most: installed packages' sources, lockfiles and manifests.
    from bench.quality.redaction import code_heavy

    yield from code_heavy(max(0, limit - made_slices))


def false_findings(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(ROOT))
    from storage.redaction import Redaction

    redaction = Redaction()
    messages = 0
    kinds: Counter[str] = Counter()
    shown = []
    for text in negatives(args.code_messages):
        messages += 1
        for finding in redaction.find(text):
            kinds[finding.kind] += 1
            shown.append(f"    {finding.kind}: …{text[max(0, finding.start - 40) : finding.end + 20]!r}…")
    total = kinds.total()
    print(f"hard negatives: {messages} messages, {total} findings ({total / messages * 10_000:.2f} per 10,000)")
    for line in shown[: args.show]:
        print(line)


# ---- worst single inputs -----------------------------------------------------------------------------


def worst_inputs() -> dict[str, str]:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(rng.getrandbits(8) for _ in range(750_000))).decode()
    curl = " ; ".join(
        f'curl -s -H "Authorization: Bearer tok{i:06d}{made(ALNUM, 8)}" -u admin:pw{i} https://x.example/{i}'
        for i in range(1700)
    )[:166_000]
    return {
        "1 MB base64 PNG": f"![shot](data:image/png;base64,{png[:1_000_000]})",
        "1 MB of `okta.`": "okta." * 200_000,
        "1 MB random base64": base64.b64encode(bytes(rng.getrandbits(8) for _ in range(750_000))).decode(),
        "166 KB line of curl": curl,
    }


def ordinary_chats(n: int) -> list[dict[str, Any]]:
    corpus = ROOT / "tests" / "fixtures" / "corpus" / "chats.jsonl"
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    out = []
    for i in range(n):
        record = dict(records[i % len(records)])
        record["id"] = f"{record.get('id', 'c')}-{i}"
        out.append(record)
    return out


def timed_import(records: list[dict[str, Any]], redact: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="pastchats-worst-") as work:
        source = Path(work) / "chats.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        env = environment(Path(work) / "user", redact)
        (Path(work) / "user").mkdir()
        started = time.perf_counter()
        cli(Path(work) / "store", env, "import", str(source))
        return time.perf_counter() - started


def worst(args: argparse.Namespace) -> None:
    cases_ = {
        name: [
            {
                "id": "w",
                "title": "worst",
                "messages": [{"role": "user", "text": text}, {"role": "assistant", "text": "ok"}],
            }
        ]
        for name, text in worst_inputs().items()
    }
    cases_["ordinary chats (throughput)"] = ordinary_chats(args.chats)
    for name, records in cases_.items():
        if args.only and args.only not in name:
            continue
        seconds: dict[bool, list[float]] = {True: [], False: []}
        for round_ in range(args.rounds):
            for redact in (True, False) if round_ % 2 == 0 else (False, True):  # neither always goes first
                seconds[redact].append(timed_import(records, redact))
        on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
        print(
            f"{name}: import with redaction {on:.1f} s, without {off:.1f} s: {on / off:.2f}x (medians of {args.rounds})"
        )


def throughput(args: argparse.Namespace) -> None:
    """The import itself (parse, redact, write; keyword-only), in this process: no start-up or embedding
    of the CLI's run to drown the difference in a loaded machine's noise."""
    sys.path.insert(0, str(ROOT))
    from importers import registry
    from storage.embedding.embedder import HashEmbedder
    from storage.library import Library
    from storage.redaction import Redaction

    records = ordinary_chats(args.chats)
    messages = sum(len(r.get("messages", [])) for r in records)
    Redaction().find("warm-up: load the rules")
    seconds: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="pastchats-throughput-") as work:
        source = Path(work) / "chats.jsonl"
        source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        for round_ in range(args.rounds):
            for redact in (True, False) if round_ % 2 == 0 else (False, True):
                home = Path(work) / f"store-{round_}-{redact}"
                library = Library.open(home, embedder=HashEmbedder(), redaction=Redaction(enabled=redact))
                started = time.perf_counter()
                conversations, _ = registry.read(source, None)
                library.import_conversations(conversations, embed=False)
                seconds[redact].append(time.perf_counter() - started)
                library.close()
    on, off = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(
        f"import of {len(records)} chats / {messages} messages, keyword-only: redaction on {messages / on:,.0f} "
        f"msg/s, off {messages / off:,.0f} msg/s; on/off time {on / off:.2f} (medians of {args.rounds})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--negatives", action="store_true")
    parser.add_argument("--worst", action="store_true")
    parser.add_argument("--throughput", action="store_true")
    parser.add_argument("--code-messages", type=int, default=20_000)
    parser.add_argument("--chats", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--show", type=int, default=20)
    parser.add_argument("--only", help="--worst: only the inputs whose name holds this")
    parser.add_argument("--keep", help="work in this folder and keep it (to look at the store)")
    args = parser.parse_args()
    if args.negatives:
        false_findings(args)
    elif args.worst:
        worst(args)
    elif args.throughput:
        throughput(args)
    else:
        red_team(args)


if __name__ == "__main__":
    main()
