def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3
    import json
    import re

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        out = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return out

    def norm(s):
        return re.sub(r"\s+", " ", str(s or "")).strip().lower()

    z = rows(final_db_path, "SELECT id FROM zaps WHERE name = ?", ("Gmail Invoices to Google Drive",))
    if len(z) != 1:
        return {"result": "others"}
    zid = z[0]["id"]
    q = "SELECT id, position, step_type, app_event_id, connection_id FROM zap_steps WHERE zap_id = ? ORDER BY position"
    before = rows(initial_db_path, q, (zid,))
    after = rows(final_db_path, q, (zid,))
    if len(after) != len(before) + 1 or [s["position"] for s in after] != list(range(1, len(after) + 1)):
        return {"result": "others"}
    first = after[0]
    if first["step_type"] != "filter" or first["id"] in [s["id"] for s in before]:
        return {"result": "others"}
    rest = [(s["id"], s["step_type"], s["app_event_id"], s["connection_id"]) for s in after[1:]]
    if rest != [(s["id"], s["step_type"], s["app_event_id"], s["connection_id"]) for s in before]:
        return {"result": "others"}
    conds = rows(final_db_path, "SELECT * FROM filter_conditions WHERE step_id = ?", (first["id"],))
    if len(conds) != 2 or len({c["group_index"] for c in conds}) != 1:
        return {"result": "others"}
    subj = [c for c in conds if "subject" in norm(c["field"])]
    sender = [c for c in conds if "from" in norm(c["field"])]
    if len(subj) != 1 or len(sender) != 1:
        return {"result": "others"}
    if subj[0]["operator"] != "text_contains" or norm(subj[0]["value"]) != "invoice":
        return {"result": "others"}
    if sender[0]["operator"] != "text_does_not_contain" or norm(sender[0]["value"]) != "noreply":
        return {"result": "others"}
    return {"result": "complete"}
