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

    z = rows(final_db_path, "SELECT id FROM zaps WHERE name = ?", ("Stripe Payments to QuickBooks",))
    if len(z) != 1:
        return {"result": "others"}
    zid = z[0]["id"]
    q = "SELECT id, zap_id, status, resolved_at FROM error_alerts ORDER BY id"
    before = rows(initial_db_path, q)
    after = {a["id"]: a for a in rows(final_db_path, q)}
    targets = [a for a in before if a["zap_id"] == zid and a["status"] == "open"]
    if not targets:
        return {"result": "others"}
    for a in targets:
        f = after.get(a["id"])
        if f is None or f["status"] != "resolved" or f["resolved_at"] is None:
            return {"result": "others"}
    tids = {a["id"] for a in targets}
    for a in before:
        if a["id"] in tids:
            continue
        f = after.get(a["id"])
        if f is None or f["status"] != a["status"]:
            return {"result": "others"}
    if len(after) != len(before):
        return {"result": "others"}
    return {"result": "complete"}
