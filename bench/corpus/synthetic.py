"""A synthetic but realistically shaped chat history, streamed: the text behind `bench.performance.perf build`.

What it imitates, because search and import costs depend on it: chats of very different lengths (a
quick question to a 150-message coding session), short user turns and long assistant answers (some
split into several passages), code blocks, identifiers (`payment-service`, `ERR_CONN_RESET`), pasted
tool output, trivial replies ("thanks!"), several sources and projects, dates spread over years.
Words are drawn from topic vocabularies plus a common-English pool with a Zipf-like skew, so the keyword
index has realistic posting lists. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from storage.models import Conversation, Message, Role

TOPICS: dict[str, list[str]] = {
    "nginx": "nginx reverse proxy upstream location server_name certbot tls header websocket timeout".split(),
    "docker": "docker compose container image volume network healthcheck dockerfile layer registry".split(),
    "postgres": "postgres replica index vacuum query planner wal connection pool migration schema".split(),
    "python": "python asyncio typing pydantic virtualenv pytest fixture decorator generator traceback".split(),
    "rust": "rust lifetime borrow checker trait cargo crate tokio async ownership clippy".split(),
    "kubernetes": "kubernetes pod deployment ingress helm namespace configmap secret node kubectl".split(),
    "react": "react component state hook effect props render vite typescript redux router".split(),
    "terraform": "terraform module state backend bucket provider plan apply variable workspace".split(),
    "baking": "sourdough starter flour hydration proof oven crust crumb levain autolyse".split(),
    "garden": "garden tomato compost seedling mulch soil watering pruning raised bed".split(),
    "finance": "budget tax invoice deduction savings pension mortgage receipt expense accountant".split(),
    "travel": "lisbon tram itinerary hotel flight train museum booking passport luggage".split(),
    "running": "marathon pace tempo interval shoes hydration taper recovery mileage injury".split(),
    "spanish": "spanish verb subjunctive conjugation vocabulary tutor accent preterite grammar".split(),
    "homelab": "homelab vlan router proxmox backup restic nas zfs snapshot firewall".split(),
    "wedding": "wedding speech toast venue caterer guest list invitation rehearsal photographer".split(),
    "ml": "embedding model training dataset tokenizer fine tune gradient loss batch inference".split(),
    "health": "sleep routine caffeine stretching posture doctor appointment vitamin dentist".split(),
    "cat": "cat litter vet vaccine kibble scratching post kitten allergy grooming".split(),
    "writing": "novel chapter outline character plot draft editor query letter revision".split(),
}
COMMON = (
    "the a to and of it is in that for you this with on be can if not are have or as your at but so "
    "what will do an was from use one like would should could also when then there need just more "
    "time make some about how which get they more first new way other see because work sure try now "
    "good right still each any well much after because set back know think want look here something "
    "thing example step option case value file change run check problem better small long different "
    "maybe really since without again usually probably instead point next last week month year"
).split()
IDENTIFIERS = [
    "payment-service",
    "ERR_CONN_RESET",
    "TypeError",
    "KeyError",
    "auth-gateway",
    "OOMKilled",
    "CrashLoopBackOff",
    "useEffect",
    "max_connections",
    "SIGTERM",
    "ECONNREFUSED",
    "user_id",
    "invoice-2023-114",
    "v2.14.3",
    "x86_64",
    "listen_addresses",
    "proxy_pass",
    "NullPointerException",
    "pg_stat_activity",
    "CVE-2024-3094",
]
SOURCES = ["claude", "chatgpt", "claude-code", "codex", "cursor", "gemini", "aider"]
PROJECTS = [None, None, None, "homelab", "payments", "thesis", "webshop", "family", "infra"]
TRIVIAL = ["thanks!", "ok", "yes please", "perfect, that worked", "got it", "sure", "no", "continue", "great"]
CODE = [
    "```python\ndef {w}(items):\n    return [i for i in items if i.{v} is not None]\n```",
    "```bash\ndocker compose logs -f {w} | grep -i {v}\n```",
    "```sql\nSELECT {w}, count(*) FROM {v} GROUP BY 1 ORDER BY 2 DESC LIMIT 20;\n```",
    "```nginx\nlocation /{w}/ {{\n    proxy_pass http://{v}:8080;\n    proxy_set_header Host $host;\n}}\n```",
    "```rust\nfn {w}(input: &str) -> Result<{v}, Error> {{\n    input.parse().map_err(Error::from)\n}}\n```",
]
START = datetime(2022, 3, 1, tzinfo=UTC)
SPAN_DAYS = 3 * 365


class CorpusWriter:
    """Streams conversations until `messages` messages have been produced."""

    def __init__(self, messages: int, seed: int = 12):
        self.messages = messages
        self.rng = random.Random(seed)
        self.topics = list(TOPICS)

    def _word(self, topic: str) -> str:
        rng = self.rng
        roll = rng.random()
        if roll < 0.28:
            return rng.choice(TOPICS[topic])
        if roll < 0.31:
            return rng.choice(TOPICS[rng.choice(self.topics)])  # a word from another topic
        if roll < 0.315:
            return rng.choice(IDENTIFIERS)
        if roll < 0.33:
            return str(rng.randint(2, 9999))
        # Zipf-like: the common words at the front of the list come far more often.
        return COMMON[min(int(rng.paretovariate(1.1)) - 1, len(COMMON) - 1)]

    def _sentence(self, topic: str) -> str:
        words = [self._word(topic) for _ in range(self.rng.randint(6, 22))]
        words[0] = words[0].capitalize()
        return " ".join(words) + self.rng.choice([".", ".", ".", "?", "!", ":"])

    def _prose(self, topic: str, words: int) -> str:
        parts: list[str] = []
        count = 0
        while count < words:
            if self.rng.random() < 0.06:
                block = self.rng.choice(CODE).format(w=self._word(topic), v=self._word(topic))
                parts.append("\n" + block + "\n")
                count += 12
            else:
                sentence = self._sentence(topic)
                parts.append(sentence)
                count += sentence.count(" ") + 1
        return " ".join(parts)

    def _tool_output(self, topic: str) -> str:
        lines = [
            f"{self.rng.randint(10, 23)}:{self.rng.randint(10, 59)}:{self.rng.randint(10, 59)} "
            f"{self.rng.choice(['INFO', 'WARN', 'ERROR', 'DEBUG'])} {self._word(topic)} {self.rng.choice(IDENTIFIERS)} "
            f"{self._word(topic)}={self.rng.randint(0, 65535)}"
            for _ in range(self.rng.randint(5, 80))
        ]
        return "\n".join(lines)

    def _message_text(self, role: Role, topic: str) -> str:
        rng = self.rng
        if role == "tool":
            return self._tool_output(topic)
        if role == "user":
            if rng.random() < 0.12:
                return rng.choice(TRIVIAL)
            return self._prose(topic, int(rng.lognormvariate(3.0, 0.8)) + 3)
        return self._prose(topic, int(rng.lognormvariate(5.15, 0.8)) + 10)

    def __iter__(self) -> Iterator[Conversation]:
        rng = self.rng
        produced = number = 0
        while produced < self.messages:
            length = min(max(2, int(rng.lognormvariate(2.3, 0.9))), 160, self.messages - produced)
            if length < 2 and produced:
                length = self.messages - produced
            source = rng.choice(SOURCES)
            topic = rng.choice(self.topics)
            created = START + timedelta(seconds=rng.uniform(0, SPAN_DAYS * 86_400))
            coding = source in ("claude-code", "codex", "cursor", "aider")
            messages: list[Message] = []
            at = created
            for index in range(length):
                role: Role = "user" if index % 2 == 0 else "assistant"
                if coding and role == "assistant" and rng.random() < 0.3:
                    role = "tool"
                at += timedelta(seconds=rng.randint(5, 900))
                text = self._message_text(role, topic)
                messages.append(Message(id=f"m{index}", index=index, role=role, text=text, created_at=at))
            yield Conversation(
                id=f"{source}:bench-{number:07d}",
                source=source,
                title=f"{topic.capitalize()}: {self._sentence(topic)[:60]}",
                created_at=created,
                updated_at=at,
                project=rng.choice(PROJECTS),
                url=None,
                messages=messages,
            )
            number += 1
            produced += length


def queries(seed: int = 5, count: int = 40) -> list[str]:
    """Search queries of the kinds people type: topic words, an identifier, a paraphrase."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        topic = rng.choice(list(TOPICS))
        words = rng.sample(TOPICS[topic], 2 if i % 3 else 3)
        if i % 5 == 0:
            words.append(rng.choice(IDENTIFIERS))
        out.append(" ".join(words))
    return out
