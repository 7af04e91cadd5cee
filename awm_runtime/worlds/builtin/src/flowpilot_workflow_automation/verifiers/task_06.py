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

    runs = rows(final_db_path, "SELECT r.id, r.input_json FROM workflow_runs r JOIN workflows w ON w.id = r.workflow_id WHERE w.name = ?", ("Vendor Invoice Approval",))
    target = [r for r in runs if cfg(r["input_json"]).get("invoice_number") == "INV-20931"]
    if len(target) != 1:
        return {"result": "others"}
    rid = target[0]["id"]
    q = "SELECT * FROM approvals WHERE run_id = ?"
    b = rows(initial_db_path, q, (rid,))
    a = rows(final_db_path, q, (rid,))
    if len(b) != 1 or len(a) != 1 or b[0]["status"] != "pending":
        return {"result": "others"}
    a = a[0]
    if a["status"] != "approved" or norm(a["comment"]).rstrip(".") != "within q3 budget" or a["decided_at"] is None:
        return {"result": "others"}
    sr = rows(final_db_path, "SELECT status FROM step_runs WHERE id = ?", (a["step_run_id"],))
    if not sr or sr[0]["status"] != "succeeded":
        return {"result": "others"}
    run = rows(final_db_path, "SELECT status FROM workflow_runs WHERE id = ?", (rid,))
    if not run or run[0]["status"] in ("waiting_approval", "failed", "cancelled"):
        return {"result": "others"}
    others_b = rows(initial_db_path, "SELECT id, status, comment FROM approvals WHERE run_id != ? ORDER BY id", (rid,))
    others_a = rows(final_db_path, "SELECT id, status, comment FROM approvals WHERE run_id != ? ORDER BY id", (rid,))
    if others_b != others_a:
        return {"result": "others"}
    return {"result": "complete"}
