"""A model stand-in: a real HTTP server on the loopback that answers agent CLIs in their providers' wire protocols.

It lets the real CLIs (Claude Code, Codex, Gemini CLI, opencode, Kimi Code) run a whole session offline: the server
plays a policy from a YAML file (read the task, write solution.py with the CLI's own file-write tool, run
`python check.py` with its shell tool, read the result, finish) and can misbehave on request (rate limits,
refused keys, server errors, a stalled or cut stream, a tool call the CLI rejects).

Data flow:
    policy.load_policy(path)              → Policy (steps, faults, usage), errors with file and line
    wire_*.read_request(body)             → Conversation (tools advertised, calls made, results returned)
    play.next_turn(policy, conversation)  → Turn (text, one tool call or none, token usage)
    wire_*.render(turn)                   → the provider's JSON or server-sent events
    server.StandIn(policy)                → an aiohttp app on 127.0.0.1, started in a thread or by
                                            `kernelbench standin serve`
"""
