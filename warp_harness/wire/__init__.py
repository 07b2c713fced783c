"""What crosses the daemon socket, shared by the daemon and its clients (the language server,
the command line, agents); neither side owns it, and it imports neither (docs/protocol.md).

- `framing`: frames, their limits, errors, a small blocking `Client`;
- `location`: where a workspace's socket and the daemon's state files live;
- `messages`: one typed class per request, reply and push, checked when read;
- `statuses`: the statuses a result carries, as enums of their wire strings.
"""
