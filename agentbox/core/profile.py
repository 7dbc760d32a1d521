"""Profile: a named identity (harness, model, intent, overrides), loaded strictly from YAML."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from agentbox.errors import InputError
from agentbox.core.intent import PermissionIntent
from agentbox.core.registry import harness_names

__all__ = [
    "HARNESSES",
    "HarnessName",
    "ModelSettings",
    "McpServer",
    "NativeOverride",
    "SecretBinding",
    "Profile",
    "LoadedProfile",
    "load_profile",
    "resolve_profile_path",
    "validation_message",
]

# the harnesses registered when this module was imported (`agentbox.core.registry`); a name is validated against
# the registry itself (`HarnessName`), so one registered later can be named too
HARNESSES = harness_names()


class _Registered:
    """A harness name as pydantic validates it: one the registry knows when the value is validated (a harness
    registered after this module was imported included); a JSON Schema exported enumerates those registered then."""

    @staticmethod
    def _check(value: Any) -> str:
        names = harness_names()
        if isinstance(value, str) and value in names:
            return value
        quoted = [repr(n) for n in names]
        expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else "".join(quoted)
        # pydantic's error for a value outside a Literal, word for word; `allowed` gives schema_hints its hint
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected, "allowed": names}
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(self._check)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(core_schema.literal_schema(list(harness_names())))


# a profile, a matrix or a baseline may name only a registered harness
HarnessName = Annotated[str, _Registered()]

_NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+){0,3}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ModelSettings(_Strict):
    """Where the harness finds its model. Names the credential variable, never holds a secret."""

    provider: str = "default"
    base_url: str | None = None
    name: str | None = None
    api_key_env: str | None = None

    @field_validator("base_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^\s/]+(/\S*)?$", value):
            raise ValueError(f"{value!r} is not an http(s) URL")
        return value

    @field_validator("api_key_env")
    @classmethod
    def _env(cls, value: str | None) -> str | None:
        if value is not None and not _ENV_RE.match(value):
            raise ValueError(f"{value!r} is not an environment variable name (give the name, not the key)")
        return value


class McpServer(_Strict):
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)


class SecretBinding(_Strict):
    """A host-side secret the sandbox sees only as a per-run placeholder: the egress proxy swaps the real value
    into `header` on requests to `hosts` (allow_domains syntax) and refuses the placeholder anywhere else."""

    hosts: tuple[str, ...] = Field(min_length=1)
    header: str = "Authorization: Bearer {value}"
    # what the placeholder starts with (then 48 random letters and digits), for a client that checks a token's
    # shape (`ghp_` for a GitHub token)
    placeholder_prefix: str = Field(default="agentbox-", pattern=r"^[A-Za-z0-9_.-]{0,40}$")

    @field_validator("hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        from agentbox.egress.policy import parse_entry

        for entry in value:
            parse_entry(entry)
        return tuple(sorted(set(value)))

    @field_validator("header")
    @classmethod
    def _header(cls, value: str) -> str:
        from agentbox.egress.swap import parse_header

        parse_header(value)
        return value


class NativeOverride(_Strict):
    min_version: str | None = None
    max_version: str | None = None
    config_patch: dict[str, Any] = Field(default_factory=dict)
    unsafe_override: bool = False

    @field_validator("min_version", "max_version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not _VERSION_RE.match(value):
            raise ValueError(f"{value!r} is not a dotted version number")
        return value


class Profile(_Strict):
    name: str
    harness: HarnessName
    model: ModelSettings = ModelSettings()
    permission_intent: PermissionIntent = PermissionIntent()
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    native_overrides: dict[HarnessName, NativeOverride] = Field(default_factory=dict)
    # variable -> where its real value may go; the sandbox sees a placeholder in that variable
    secrets: dict[str, SecretBinding] = Field(default_factory=dict)

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, value: dict[str, SecretBinding]) -> dict[str, SecretBinding]:
        for name in value:
            if not _ENV_RE.match(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return dict(sorted(value.items()))

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(f"{value!r} must be lower-case letters, digits, '.', '_' or '-' (it names folders)")
        return value

    @model_validator(mode="after")
    def _mcp_servers_defined(self) -> "Profile":
        missing = sorted(set(self.permission_intent.mcp.servers) - set(self.mcp_servers))
        if missing:
            raise ValueError(
                f"permission_intent.mcp.servers names servers not defined in mcp_servers: {', '.join(missing)}"
            )
        return self

    @model_validator(mode="after")
    def _secrets_apart_from_the_model_key(self) -> "Profile":
        if self.model.api_key_env and self.model.api_key_env in self.secrets:
            raise ValueError(
                f"secrets: {self.model.api_key_env} is model.api_key_env, which the model route already "
                "swaps in; leave it out of secrets"
            )
        return self

    def override(self) -> NativeOverride | None:
        return self.native_overrides.get(self.harness)


class LoadedProfile(BaseModel):
    """A validated profile with where it came from and the digest of its exact bytes."""

    model_config = ConfigDict(frozen=True)
    profile: Profile
    source: str
    digest: str


def validation_message(error: ValidationError) -> str:
    """Every error of ERROR as `field: message`, on one line (a profile file's errors: yaml_input.Document)."""
    from agentbox.core.schema_hints import describe

    return "; ".join(f"{loc}: {msg}" if loc else msg for loc, msg in map(describe, error.errors()))


def _looks_like_path(arg: str) -> bool:
    """A slash or a YAML suffix makes a path; a bare word is a name, even when a file of that name stands in the
    current folder: that folder is often a workspace a run wrote, and a file it left there must never stand in for
    the profile the user named (`./NAME` reads such a file on purpose)."""
    return "/" in arg or arg.endswith((".yaml", ".yml"))


def resolve_profile_path(arg: str) -> Path:
    """A profile argument is a path to a YAML file, or a bare name under $AGENTBOX_HOME/profiles."""
    if _looks_like_path(arg):
        if "\\" in arg:
            raise InputError("backslashes are not allowed in a profile path", file=arg)
        if Path(arg).is_dir():
            raise InputError("is a directory, not a profile file", file=arg)
        return Path(arg)
    if not _NAME_RE.match(arg):
        raise InputError("not a profile name (lower-case letters, digits, '.', '_', '-') nor a path", file=arg)
    from agentbox.core.home import profiles_dir

    base = profiles_dir()
    for suffix in (".yaml", ".yml"):
        candidate = base / f"{arg}{suffix}"
        if candidate.exists():
            return candidate
    raise InputError(f"no profile named {arg!r} in {base}", file=arg)


def load_profile(arg: str | Path) -> LoadedProfile:
    path = resolve_profile_path(str(arg))
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", file=str(path)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(path)) from None
    from agentbox.core.yaml_input import parse

    document = parse(raw, str(path))
    if not isinstance(document.data, dict):
        raise InputError("a profile is a YAML mapping", file=str(path))
    profile = document.validate(Profile)
    return LoadedProfile(profile=profile, source=str(path), digest=hashlib.sha256(raw).hexdigest())
