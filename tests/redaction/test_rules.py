"""What redaction finds: every promised format wherever chats hold it, and nothing that only looks random."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid

import pytest

from storage.redaction import Redaction, redaction_counts
from storage.redaction.rules import RuleSet, compile_rule
from tests.redaction.secrets import SECRETS, in_context, made
from tests.storage.helpers import conversation

REDACTION = Redaction()


def redacted(text: str) -> str:
    found = REDACTION.find(text)
    for finding in reversed(found):
        text = text[: finding.start] + "█" + text[finding.end :]
    return text


@pytest.mark.parametrize(("kind", "secret"), SECRETS, ids=[f"{k}-{i}" for i, (k, _) in enumerate(SECRETS)])
def test_every_format_is_hidden_in_prose_code_json_shell_env_and_tool_output(kind: str, secret: str) -> None:
    contexts = in_context(kind, secret)
    for text in contexts:
        assert secret not in redacted(text), text
    # Named by its own kind where nothing more precise stands around it (a curl header or a
    # secret-named variable may name it instead elsewhere).
    assert kind in [f.kind for f in REDACTION.find(contexts[0])]
    assert kind in [f.kind for f in REDACTION.find(contexts[2])]


def test_the_promised_kinds_number_at_least_twenty() -> None:
    assert len({kind for kind, _ in SECRETS}) >= 20


def test_a_secret_keeps_the_words_around_it_and_the_same_secret_its_number() -> None:
    token, other = SECRETS[1][1], "ghp_" + made("abcdefghijklmnopqrstuvwxyz0123456789", 36)
    texts = [
        f"GITHUB_TOKEN={token}\nthen the deploy key {other}",
        f"Revoke {token} first; the nginx config is fine.",
        "thanks",
    ]
    chat = conversation("keys", texts, title=f"rotating {token}")
    out, counts = REDACTION.redact(chat)
    assert out.title == "rotating [redacted: github-pat #1]"
    assert (
        out.messages[0].text == "GITHUB_TOKEN=[redacted: github-pat #1]\nthen the deploy key [redacted: github-pat #2]"
    )
    assert out.messages[1].text == "Revoke [redacted: github-pat #1] first; the nginx config is fine."
    assert out.messages[2] is chat.messages[2]
    assert counts == {"github-pat": 2}
    assert redaction_counts([out.title, *(m.text for m in out.messages)]) == {"github-pat": 2}
    assert REDACTION.redact(out)[0] == out  # a placeholder is never taken for a secret


def test_a_chat_without_secrets_is_returned_as_it_is() -> None:
    chat = conversation("plain", ["hi"], title="nginx")
    assert REDACTION.redact(chat) == (chat, {})


# What coding chats are full of and is not a secret.
NOT_SECRETS = [
    "Merged in commit 3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e; the tag v2.3.1 points at 9c1d2e3.",
    f"Request id {uuid.UUID(int=123456789)} and session {uuid.UUID(int=987654321)} failed at 12:03.",
    '"node_modules/left-pad": {"version": "1.3.0", '
    '"resolved": "https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", '
    f'"integrity": "sha512-{base64.b64encode(hashlib.sha512(b"left-pad").digest()).decode()}"}}',
    '[[package]]\nname = "anyio"\nversion = "4.6.0"\n'
    'sdist = { url = "https://files.pythonhosted.org/packages/a.tar.gz", '
    f'hash = "sha256:{hashlib.sha256(b"anyio").hexdigest()}" }}',
    f"![chart](data:image/png;base64,{base64.b64encode(bytes(range(256)) * 4).decode()})",
    "def get_user_by_primary_key_and_secondary_index(primary_key, secondary_index_name, api_version=3):",
    "const apiKey = process.env.OPENAI_API_KEY;\nconst token = await getAccessTokenSilently({ audience });",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())\nif not check_password(password): raise",
    "    private_key: x25519.X25519PrivateKey\n    public_key: ec.EllipticCurvePublicKey | None = None",
    "DB_PASSWORD=${DB_PASSWORD}\nAPI_TOKEN=$API_TOKEN\nSECRET_KEY=<your-secret-key>\nAUTH_TOKEN=changeme",
    "url = f'postgres://{user}:{password}@{host}/{db}'  # filled from the environment",
    "EXPIRED_TOKEN = 'expired_token'\nCLIENT_CREDENTIALS = 'client_credentials'\nTOKEN_TTL=3600",
    "login(username, password=password, timeout=30); connect(password=self.password, retries=3)",
    f"sha256sum dist/pastchats.whl\n{hashlib.sha256(b'wheel').hexdigest()}  dist/pastchats.whl",
    "The key insight: a token bucket with 10 tokens refills at 1 token/s; the secret is patience.",
    f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{made('ABCDEFGHabcdefgh0123456789', 43)} me@laptop",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_hashes_ids_lockfiles_images_and_code_are_left_alone(text: str) -> None:
    assert REDACTION.find(text) == []


def test_off_finds_nothing_and_the_allow_list_keeps_kinds_and_patterns() -> None:
    kind, secret = SECRETS[0]
    text = in_context(kind, secret)[0]
    assert Redaction(enabled=False).find(text) == []
    assert Redaction(allow=(kind,)).find(text) == []
    assert Redaction(allow=("AKIA[A-Z2-7]{16}",)).find(text) == []
    assert Redaction(allow=("AKIA",)).find(text) != []  # a pattern keeps what it matches in full only
    with pytest.raises(ValueError, match="not a regular expression"):
        Redaction(allow=("([",))


def test_the_stamp_follows_the_rules_and_the_allow_list() -> None:
    assert Redaction().stamp == RuleSet.load().stamp
    assert Redaction(allow=("generic-api-key",)).stamp != Redaction().stamp
    assert Redaction(enabled=False).stamp == "off"


@pytest.mark.parametrize(
    ("re2", "text", "matches"),
    [
        (r"\b(p8e-(?i)[a-z0-9]{4})\b", "p8e-AbC9", True),  # a flag set mid-pattern lasts to its group's end
        (r"\b(p8e-(?i)[a-z0-9]{4})\b", "P8E-abc9", False),  # ...and not before it
        (r"(?:'(?i)key|\"(?i)tok)en", '"TOKen', True),  # ...across `|`
        (r"\b(pat[[:alnum:]]{3})\b", "patA1b", True),  # POSIX classes
        (r"abc\z", "abc", True),
        (r"\w+", "é", False),  # RE2's classes are ASCII
    ],
)
def test_rules_read_as_re2_reads_them(re2: str, text: str, matches: bool) -> None:
    assert bool(compile_rule(re2).search(text)) is matches


def test_every_maintained_rule_loads() -> None:
    rules = RuleSet.load()
    maintained = json.dumps([r.kind for r in rules.rules])
    assert len(rules.rules) > 200
    for kind in ("aws-access-token", "github-pat", "gitlab-pat", "slack-bot-token", "stripe-access-token"):
        assert kind in maintained
    for kind in ("openai-api-key", "anthropic-api-key", "gcp-api-key", "private-key", "jwt", "generic-api-key"):
        assert kind in maintained
