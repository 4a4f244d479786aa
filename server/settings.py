"""Every setting pastchats reads, in one place: built once by the CLI from flags and environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import platformdirs
from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from importers.registry import AGENT_LOGS, AGENT_VARIABLES
from storage.embedding.model_files import DEFAULT_MODEL
from storage.upkeep.store_meta import store_model

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR"]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_AGENTS = ", ".join(importer.name for importer in AGENT_LOGS)
_VARIABLES = "; ".join(f"`{name}`: {description}" for name, description in AGENT_VARIABLES.items())


def agent_environment() -> dict[str, str]:
    """The variables the agents themselves honour to move their logs (each importer declares its own),
    as this process's environment sets them: sync looks where the agents look."""
    return {name: os.environ[name] for name in AGENT_VARIABLES if os.environ.get(name)}


def default_home() -> Path:
    return Path(platformdirs.user_data_dir("pastchats", appauthor=False))


def own_cache() -> Path:
    """pastchats' own folder in the platform's user cache dir (its models and what it derives from them)."""
    return Path(platformdirs.user_cache_dir("pastchats", appauthor=False))


def default_model_cache() -> Path:
    """pastchats' own model cache: every process finds it, whatever environment a client gives it."""
    return own_cache() / "models"


def derived_models_dir() -> Path:
    """Where pastchats keeps files it derives from installed models (the int8 copy for documents):
    its own cache, whatever folder the models themselves are read from (which may be shared)."""
    return default_model_cache() / "derived"


__all__ = [
    "LOOPBACK_HOSTS",
    "Settings",
    "agent_environment",
    "default_home",
    "default_model_cache",
    "derived_models_dir",
    "own_cache",
]


class Settings(BaseSettings):
    """pastchats settings. Environment variables are `PASTCHATS_<NAME>` unless noted."""

    # A variable set but empty (a setting left blank in a bundle's or a client's config) means the default.
    model_config = SettingsConfigDict(
        env_prefix="PASTCHATS_", validate_by_name=True, extra="ignore", env_ignore_empty=True
    )

    home: Path = Field(
        default_factory=default_home,
        description="Directory holding the store (conversations, vectors, keyword index). "
        "Default: the platform's user data directory for pastchats.",
    )
    store_uri: str | None = Field(
        default=None,
        description="Share the store across machines through an object store: `s3://BUCKET/PREFIX` on S3 or "
        "any S3-compatible server (MinIO, Cloudflare R2, SeaweedFS). Credentials and endpoint come from the "
        "standard variables (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ENDPOINT_URL`, "
        "`AWS_ALLOW_HTTP=true` for plain http). Each machine sends its own chats there, redacted, and keeps a "
        "copy of every machine's in its home, with its own indexes; the archive of agent logs never leaves it.",
    )
    model: str | None = Field(
        default=None,
        description="fastembed text-embedding model. Default: the one the store was last embedded with "
        "(`pastchats model use NAME` switches it), else sentence-transformers/all-MiniLM-L6-v2. "
        "Changing it re-embeds the store.",
    )
    model_cache: Path = Field(
        default_factory=default_model_cache,
        validation_alias=AliasChoices("PASTCHATS_MODEL_CACHE", "FASTEMBED_CACHE_PATH", "model_cache"),
        description="Where pastchats keeps (and looks for) embedding models. Default: pastchats' own folder in "
        "the platform's user cache dir; `FASTEMBED_CACHE_PATH` (fastembed's own variable) is honoured too.",
    )
    output_budget_chars: int = Field(
        default=12_000,
        ge=1_000,
        le=200_000,
        description="Upper bound on the size of one tool result's text, in characters. "
        "Longer results are trimmed and say how to get the rest.",
    )
    http_token: str | None = Field(
        default=None,
        description="Bearer token clients must send (`Authorization: Bearer <token>`) over HTTP/SSE. "
        "Required when the server listens on a non-loopback host.",
    )
    host: str = Field(default="127.0.0.1", description="Interface the HTTP/SSE transports listen on.")
    port: int = Field(default=8765, ge=1, le=65_535, description="Port the HTTP/SSE transports listen on.")
    log_level: LogLevel = Field(
        default="WARNING", description="Least severe log level written (`-v` gives INFO, `-vv` DEBUG)."
    )
    log_file: Path | None = Field(
        default=None, description="Append logs to this file instead of stderr. Logs never go to stdout."
    )

    sync: bool = Field(
        default=True,
        description=f"Follow the agent logs ({_AGENTS}) while `pastchats serve` "
        "runs: what an agent writes is searchable within seconds. One process per store watches (the others "
        "take over when it exits). `false` turns it off.",
    )
    sync_interval: int = Field(
        default=600,
        ge=0,
        description="Seconds between full rescans of the agent logs while watching them (a safety net for "
        "changes no file event reported); 0: none.",
    )
    watch_polling: bool = Field(
        default=False,
        description="Watch the agent logs by polling them every second instead of through the system's file "
        "events. Chosen by itself on network filesystems and where events fail to start; `doctor` says which.",
    )
    sync_paths: list[Path] = Field(
        default_factory=list,
        description="Extra agent-log files or folders to sync, e.g. repositories with Aider history "
        '(JSON list: `["~/code/app"]`).',
    )
    user_home: Path = Field(
        default_factory=Path.home,
        description="The home directory in which sync looks for agent logs. Default: yours.",
    )
    agent_env: dict[str, str] = Field(
        default_factory=agent_environment,
        description="The agents' own location variables, read from the environment as the agents do (a JSON "
        f"object overrides them): {_VARIABLES}.",
    )
    redact: bool = Field(
        default=True,
        description="Replace secrets (API keys, tokens, private keys, passwords in URLs, connection strings "
        "and `.env` lines) with typed placeholders before anything is stored, embedded or indexed. `off` keeps "
        "chats verbatim: a secret in a chat is then searchable and shown to every client's model.",
    )
    redact_allow: list[str] = Field(
        default_factory=list,
        description="What redaction keeps: kinds as `stats` names them (a mistyped kind is an error naming "
        "the known ones), or regular expressions a kept secret matches in full "
        '(JSON list: `["generic-api-key", "AKIA[A-Z0-9]{12}EXAMPLE"]`).',
    )
    exclude_projects: list[str] = Field(
        default_factory=list,
        description='Projects never imported (shell globs, JSON list: `["work-secret*"]`).',
    )
    exclude_paths: list[str] = Field(
        default_factory=list,
        description="Source files never read by import or sync (shell globs, JSON list).",
    )
    exclude_sources: list[str] = Field(
        default_factory=list,
        description='Whole sources never imported (e.g. `["cursor"]`; JSON list).',
    )

    @field_validator("store_uri")
    @classmethod
    def _object_store(cls, uri: str | None) -> str | None:
        if uri and not uri.startswith("s3://"):
            raise ValueError(f"{uri!r} is not an object-store address: give s3://BUCKET/PREFIX")
        if uri and not uri.removeprefix("s3://").strip("/"):
            raise ValueError("the store address names no bucket: give s3://BUCKET/PREFIX")
        return uri

    @field_validator("redact_allow")
    @classmethod
    def _patterns(cls, entries: list[str]) -> list[str]:
        if entries:
            from storage.redaction import check_allow  # deferred: the rules' names are read only when needed

            check_allow(entries)
        return entries

    def model_name(self) -> str:
        """The model to use: the setting, else the one the store was embedded with, else the default."""
        return self.model or store_model(self.home) or DEFAULT_MODEL

    @property
    def is_loopback(self) -> bool:
        return self.host in LOOPBACK_HOSTS
