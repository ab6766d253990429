"""What the course's chapters import: code saved from the chapters, plus small, tested plumbing.

A chapter imports these modules by module (``from helpers import checkpoints`` …
``checkpoints.print_history(...)``), so a reader tells the course's calls from LangGraph's
at a glance. Definitions a chapter teaches stand in one of its cells first, marked
``# saved as helpers.<module>.<name>``, and are kept identical here (CONTRIBUTING.md,
"Show, then save"). The kit's own machinery (build, grading, benchmarks) lives in the
separate ``course`` package, which nothing here imports.

Module index: each module, the chapters that import it (— when only other helpers do),
and what it holds. ``tests/course/test_architecture.py`` keeps the chapter lists true.

    agent_graphs            13 16     the Agent Server's graphs (07's approval workflow, chat) and auth handlers
    appendix_graphs         13        a graph that stays busy until released; one whose worker goes away
    approval_workflow       07 13 16  the booking-approval workflow with interrupts (saved from 07)
    booking_crashes         06 08     real crashes in forks of the kernel: lost writes, idempotency keys
    business_ids            10        ID properties, personal-data footprints, the hold graph, a loopback API
    checkpoint_anatomy      02        structural views of a checkpoint and of a saver's tables
    checkpoint_ids          04        uuid6 checkpoint IDs read field by field; the parent chain
    checkpoints             02 03 04 05 06 09 10 11 12 16  history tables with stable labels (C0, C1, …)
    checks                  00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16  the exercise checks and their protocol
    conformance             16        LangGraph's checkpointer conformance suite, run from a cell or a check
    counting_saver          02 08 16  a saver wrapper that counts (and can slow) each call
    delta_graphs            15 16     the assistant with a DeltaChannel message list (saved from 15)
    durability_costs        08        what each durability mode costs, as medians and ratios
    durability_experiments  08        the linear graph (saved from 08), save counts, real crashes
    environment             00        the environment self-check against the pins
    explorer                09        the interactive checkpoint explorer (ipywidgets)
    fare_lookup_graphs      06 16     the lookup and booking graphs (saved from 06), stand-in services
    folder_saver            16        a checkpointer of your own on a folder of JSON files (saved from 16)
    history_tree            09 16     a thread's history as a tree: edges, lanes, a plot
    kernel_forks            01 07     a child process forked from the kernel itself: no second LangGraph import
    ledger                  10 11     the SQLite command ledger, a package: schema, acceptance, delivery, service, …
    multitask               13        double-texting on the Agent Server, made deterministic
    namespaces              05 11     the trip planner's nested subgraphs (saved from 05), namespace views
    persistent_service      14        the travel assistant as a FastAPI service on AsyncPostgresSaver (saved from 14)
    preloaded_processes     01 10 12  child processes forked from a server that imported LangGraph once
    processes               00        real child Python processes (fresh interpreters)
    serializer_safety       12        custom types in state, the msgpack allowlist, the advisories
    server_checkpointer     16        the factory langgraph.json names: a FolderSaver for the Agent Server
    servers                 12 13 14 15 16  a private PostgreSQL, a local Agent Server, your ASGI app; always stopped
    service_load            14        concurrent HTTP clients against chapter 14's service; latency, checkpoints/s, plot
    state_growth            12 15     trimming, summaries, references instead of content
    step_timeline           03        the booking flow (saved from 03) and super-steps made visible
    tenancy                 10        one opaque thread per owned conversation, with an access check
    text_tables             02 03 04 05 06 07 08 10 11 12 13 14 15  plain-text tables for notebooks
    thread_growth           15        bytes and messages a thread stores per turn, and DeltaChannel replay counts
    travel_graphs           01 02 04 09 10 11 12 13 14 15 16  the running example: chat graph (saved from 01)
    worker_faults           13        a run whose worker goes away: node-start logs, the server's task cancelled
"""
