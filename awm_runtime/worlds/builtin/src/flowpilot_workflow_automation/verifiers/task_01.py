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

    wf = rows(final_db_path, "SELECT id FROM workflows WHERE name = ?", ("Daily Sales Digest",))
    if len(wf) != 1:
        return {"result": "others"}
    wid = wf[0]["id"]
    q = "SELECT * FROM triggers WHERE workflow_id = ? ORDER BY id"
    before = rows(initial_db_path, q, (wid,))
    after = rows(final_db_path, q, (wid,))
    if any(norm(t["name"]) == "monday recap" for t in before):
        return {"result": "others"}
    new = [t for t in after if norm(t["name"]) == "monday recap"]
    if len(new) != 1:
        return {"result": "others"}
    t = new[0]
    if t["trigger_type"] != "schedule" or norm(t["cron_expression"]) != "30 7 * * 1":
        return {"result": "others"}
    if t["timezone"] != "America/Chicago" or int(t["is_enabled"]) != 1:
        return {"result": "others"}
    old_b = [x for x in before if x["name"] == "Weekdays 8am ET"]
    old_a = [x for x in after if x["name"] == "Weekdays 8am ET"]
    if len(old_b) != 1 or len(old_a) != 1:
        return {"result": "others"}
    if int(old_b[0]["is_enabled"]) != 1 or int(old_a[0]["is_enabled"]) != 0:
        return {"result": "others"}
    if old_a[0]["cron_expression"] != old_b[0]["cron_expression"]:
        return {"result": "others"}
    if len(after) != len(before) + 1:
        return {"result": "others"}
    return {"result": "complete"}
