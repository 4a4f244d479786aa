"""Query analysis: turn whatever the model (or a user) typed into safe, useful input for both legs.

No user text reaches a query parser: the keyword leg gets analysed tokens that are built into query
objects, and the vector leg gets plain text, trimmed to what the model can read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import tantivy

from storage.query.grammar import parse, plain_words

MAX_QUERY_CHARS = 1000
MAX_KEYWORD_TERMS = 32

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just let me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same she should so some such
    than that the their theirs them themselves then there these they this those through to too under until
    up very was we were what when where which while who whom why will with would you your yours yourself
    yourselves also get got how's i'm i've it's that's what's we're we've you're you've
    """.split()
)

# Words that talk about the chat rather than its content: useless for matching, harmful for BM25.
META_WORDS = frozenset(
    """
    chat chats conversation conversations discuss discussed discussing discussion talk talked talking said
    say mentioned mention remember recall earlier previously previous last time times ago yesterday today
    week weeks month months year recently recent past before told tell asked ask thread session we us our
    did again something anything thing things
    """.split()
)

# Phrases that point back at the conversation itself ("continue where we left off", "pick up where I
# stopped"): their words ("continue", "left") are in no chat about the topic, and as the query's rarest
# words they would make every chat on it lack what was asked.
_META_PHRASES = re.compile(
    r"\b(?:(?:continue|resume|pick up|carry on|go on)\s+)?(?:from\s+)?where\s+(?:we|i|you)\s+"
    r"(?:left off|left it|stopped|were|ended)\b",
    re.IGNORECASE,
)

# Identifiers such as payment-service, use_x_forwarded_for, std::vector or v1.2.3: kept as phrases.
_IDENTIFIER = re.compile(r"[^\W_]+(?:[-_.:/]+[^\W_]+)+")

# Words joined by hyphens (fraud-check, self-hosted): an identifier the embedding model still reads.
_HYPHENATED_WORDS = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")

# TypeError, getUserById, E0106, sha256, k8s: mixed case inside a word, or letters mixed with digits.
_CODE_WORD = re.compile(r"[a-z][A-Z]|[A-Za-z]\d|\d[A-Za-z]")

_ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
_PLAIN = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .build()
)
# The same words as typed (`_PLAIN` before lower-casing), to name them back to the model.
_TYPED = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(tantivy.Filter.remove_long(40)).build()


def stem_tokens(text: str) -> list[str]:
    """The tokens the `en_stem` tokenizer would index for this text."""
    return list(_ANALYZER.analyze(text))


_WORD = re.compile(r"[^\W_]+")
_STEMS: dict[str, str] = {}
_MAX_STEMS = 200_000


def stem_set(text: str) -> set[str]:
    """The distinct stems of `text`, as `stem_tokens` would give them, cheaply.

    Coverage is measured on ~100 passages per search: stemming every token of each through the analyzer
    cost ~0.2 ms a passage. Distinct words are stemmed once, in one analyzer call, and remembered.
    """
    return stem_words(set(_WORD.findall(text.lower())))


def stem_words(words: set[str]) -> set[str]:
    """`stem_set` of words already lower-cased and split (each a whole `[^\\W_]+` run): its stems."""
    words = {w for w in words if len(w.encode("utf-8")) < 40}
    missing = [w for w in words if w not in _STEMS]
    if missing:
        stems = list(_ANALYZER.analyze(" ".join(missing)))
        if len(stems) != len(missing):  # a word the tokenizer splits differently: one at a time
            stems = [" ".join(_ANALYZER.analyze(w)) for w in missing]
        if len(_STEMS) + len(missing) > _MAX_STEMS:
            _STEMS.clear()
        _STEMS.update(zip(missing, stems, strict=True))
    return {_STEMS[w] for w in words}


@dataclass(frozen=True)
class AnalysedQuery:
    text: str  # for the vector leg
    terms: tuple[str, ...]  # stemmed, de-duplicated, for the keyword leg
    phrases: tuple[tuple[str, ...], ...]  # identifiers like payment-service, as stemmed token sequences
    words: tuple[str, ...] = ()  # each term's word as the query spelled it (what a result names)
    has_identifier: bool = False  # code-like tokens: exact words matter more than meaning
    # Identifiers as typed (payment-service, use_x_forwarded_for): what a text holds word for word.
    identifiers: tuple[str, ...] = ()
    # An identifier whose meaning the embedding model cannot tell (E0106, use_x_forwarded_for,
    # std::vector): not words joined by hyphens, which it reads as words ("self-hosted").
    code: bool = False
    meta_only: bool = False  # nothing but meta and stop words ("what did we discuss yesterday")
    # The grammar (`storage.query.grammar`): each quoted phrase as typed, as stemmed tokens (what the index
    # matches) and as plain words (what a text is checked for); the stems only the phrases hold (they
    # count as matched only as a phrase); each excluded word or phrase as typed and as stemmed tokens.
    quoted: tuple[str, ...] = ()
    required: tuple[tuple[str, ...], ...] = ()
    required_words: tuple[tuple[str, ...], ...] = ()
    phrase_terms: frozenset[str] = frozenset()
    excluded_words: tuple[str, ...] = ()
    excluded: tuple[tuple[str, ...], ...] = ()
    notes: tuple[str, ...] = ()  # what the grammar did that the query may not have meant
    only_excluded: bool = False  # nothing to search for, only what to leave out

    @property
    def grammar(self) -> bool:
        """Whether the query asks for a phrase or leaves something out."""
        return bool(self.required or self.excluded)

    @property
    def is_empty(self) -> bool:
        return not self.text


def analyse(query: str) -> AnalysedQuery:
    parsed = parse(query.replace("\x00", " ")[: MAX_QUERY_CHARS * 2])
    text = parsed.text[:MAX_QUERY_CHARS]
    asked = _META_PHRASES.sub(" ", text)
    words = list(_PLAIN.analyze(asked)) or list(_PLAIN.analyze(text))
    asked = asked if words else text
    typed = list(_TYPED.analyze(asked))
    spelled = dict(zip(words, typed, strict=False)) if len(typed) == len(words) else {}
    content = [w for w in words if w not in STOPWORDS and w not in META_WORDS]
    meta_only = not content
    if meta_only:  # a query of only meta words still searches with what it has
        content = [w for w in words if w not in STOPWORDS] or words
    terms: list[str] = []
    term_words: list[str] = []
    for word in content:
        for term in stem_tokens(word):
            if term not in terms:
                terms.append(term)
                term_words.append(spelled.get(word, word))
    phrases = []
    identifiers: list[str] = []
    for match in _IDENTIFIER.finditer(text):
        tokens = tuple(stem_tokens(match.group(0)))
        if 1 < len(tokens) <= 8 and tokens not in phrases:
            phrases.append(tokens)
            identifiers.append(match.group(0))
    code_word = any(_CODE_WORD.search(word) for word in text.split())
    identifier = bool(phrases) or code_word
    code = code_word or any(not _HYPHENATED_WORDS.fullmatch(name) for name in identifiers)
    quoted = [(p, tuple(stem_tokens(p)), tuple(plain_words(p))) for p in parsed.phrases[:8]]
    quoted = [q for q in quoted if q[1]]  # a phrase of only words the index leaves out asks for nothing
    for _typed, tokens, _words in quoted:  # a phrase ranks as an identifier does, word for word
        if len(tokens) > 1 and tokens not in phrases:
            phrases.append(tokens)
    loose = set(stem_tokens(parsed.loose)) if quoted else set()
    excluded = [(w, tuple(stem_tokens(w))) for w in parsed.excluded[:MAX_KEYWORD_TERMS]]
    return AnalysedQuery(
        text=text,
        terms=tuple(terms[:MAX_KEYWORD_TERMS]),
        words=tuple(term_words[:MAX_KEYWORD_TERMS]),
        phrases=tuple(phrases[: 8 + len(quoted)]),
        has_identifier=identifier,
        identifiers=tuple(identifiers[:8]),
        code=code,
        meta_only=meta_only,
        quoted=tuple(q[0] for q in quoted),
        required=tuple(q[1] for q in quoted),
        required_words=tuple(q[2] for q in quoted),
        phrase_terms=frozenset(t for q in quoted for t in q[1]) - loose,
        excluded_words=tuple(w for w, tokens in excluded if tokens),
        excluded=tuple(tokens for _w, tokens in excluded if tokens),
        notes=parsed.notes,
        only_excluded=parsed.only_excluded,
    )
