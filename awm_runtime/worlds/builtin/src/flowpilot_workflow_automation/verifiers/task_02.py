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

    q = "SELECT * FROM workflows WHERE name = ?"
    b = rows(initial_db_path, q, ("Payroll Export to ADP",))
    a = rows(final_db_path, q, ("Payroll Export to ADP",))
    if len(b) != 1 or len(a) != 1:
        return {"result": "others"}
    b, a = b[0], a[0]
    if b["status"] == "paused" or a["status"] != "paused":
        return {"result": "others"}
    if norm(b["error_notification_email"]) == "payroll-alerts@flowpilot.io":
        return {"result": "others"}
    if norm(a["error_notification_email"]) != "payroll-alerts@flowpilot.io":
        return {"result": "others"}
    for col in ("folder_id", "owner_user_id", "team_id", "timeout_seconds"):
        if a[col] != b[col]:
            return {"result": "others"}
    others_b = rows(initial_db_path, "SELECT id, status FROM workflows WHERE name != ? ORDER BY id", ("Payroll Export to ADP",))
    others_a = rows(final_db_path, "SELECT id, status FROM workflows WHERE name != ? ORDER BY id", ("Payroll Export to ADP",))
    if others_b != others_a:
        return {"result": "others"}
    return {"result": "complete"}
