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

    q = "SELECT r.id, r.status FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ? ORDER BY r.id"
    b = rows(initial_db_path, q, ("Customer Churn Alert",))
    a = rows(final_db_path, q, ("Customer Churn Alert",))
    if not b or a != b:
        return {"result": "others"}
    latest = rows(final_db_path, "SELECT r.id FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ? AND r.status = 'failed' ORDER BY r.created_at DESC, r.id DESC LIMIT 1", ("Customer Churn Alert",))
    if not latest:
        return {"result": "others"}
    failed = rows(final_db_path, "SELECT s.name, sr.error_message FROM step_runs sr JOIN workflow_steps s ON s.id = sr.step_id WHERE sr.run_id = ? AND sr.status = 'failed'", (latest[0]["id"],))
    if len(failed) != 1:
        return {"result": "others"}
    ans = norm(final_answer)
    if not ans or norm(failed[0]["name"]) not in ans:
        return {"result": "others"}
    err = norm(failed[0]["error_message"])
    key = err.split(":")[0].strip()
    if key in ans or "ownerid" in ans or "required fields are missing" in ans or "required field missing" in ans:
        return {"result": "complete"}
    return {"result": "others"}
