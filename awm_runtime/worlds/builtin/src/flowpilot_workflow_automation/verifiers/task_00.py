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

    def cfg(text):
        try:
            v = json.loads(text or "{}")
            return v if isinstance(v, dict) else {}
        except Exception:
            return {}

    wf_i = rows(initial_db_path, "SELECT id FROM workflows WHERE name = ?", ("Vendor Invoice Approval",))
    wf_f = rows(final_db_path, "SELECT id FROM workflows WHERE name = ?", ("Vendor Invoice Approval",))
    if len(wf_i) != 1 or len(wf_f) != 1:
        return {"result": "others"}
    wid = wf_f[0]["id"]
    q = "SELECT * FROM variables WHERE key = ?"
    before = rows(initial_db_path, q, ("MAX_INVOICE_AMOUNT_USD",))
    after = rows(final_db_path, q, ("MAX_INVOICE_AMOUNT_USD",))
    if before:
        return {"result": "others"}
    scoped = [v for v in after if v["workflow_id"] == wid]
    if len(scoped) != 1 or len(after) != 1:
        return {"result": "others"}
    v = scoped[0]
    if str(v["value"]).strip().replace(",", "") != "250000":
        return {"result": "others"}
    if norm(v["description"]).rstrip(".") != "hard cap before cfo review":
        return {"result": "others"}
    # other variables untouched
    others_i = rows(initial_db_path, "SELECT id, key, value, workflow_id FROM variables ORDER BY id")
    others_f = rows(final_db_path, "SELECT id, key, value, workflow_id FROM variables WHERE key != ? ORDER BY id", ("MAX_INVOICE_AMOUNT_USD",))
    if others_i != others_f:
        return {"result": "others"}
    return {"result": "complete"}
