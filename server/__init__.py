"""The asyncio server. Its layers, top to bottom (docs/architecture.md, and import-linter's
contracts in pyproject.toml): the entry points (`__main__`), the composition (`app`), the
command families (`commands/`), the subsystems (`persistence/`, `scripting/`, `acl/`,
`blocking`, `pubsub`, `tracking`, `eviction`, reporting), and the core (`core`, `connection`,
`dispatch`, `client`, `config` and the small modules they share). A layer imports only the
layers below it, and `storage` and `protocol`; the core knows no command."""
