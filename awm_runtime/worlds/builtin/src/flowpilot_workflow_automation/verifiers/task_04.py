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

    wf = rows(initial_db_path, "SELECT id FROM workflows WHERE name = ?", ("Legacy CRM Sync",))
    if len(wf) != 1:
        return {"result": "others"}
    wid = wf[0]["id"]
    target = rows(initial_db_path, "SELECT * FROM triggers WHERE workflow_id = ? AND trigger_type = 'webhook' AND is_enabled = 0", (wid,))
    if len(target) != 1:
        return {"result": "others"}
    tid = target[0]["id"]
    if rows(final_db_path, "SELECT id FROM triggers WHERE id = ?", (tid,)):
        return {"result": "others"}
    ids_b = [r["id"] for r in rows(initial_db_path, "SELECT id FROM triggers ORDER BY id")]
    ids_a = [r["id"] for r in rows(final_db_path, "SELECT id FROM triggers ORDER BY id")]
    if ids_a != [i for i in ids_b if i != tid]:
        return {"result": "others"}
    other_b = rows(initial_db_path, "SELECT * FROM triggers WHERE workflow_id = ? AND id != ?", (wid, tid))
    other_a = rows(final_db_path, "SELECT * FROM triggers WHERE workflow_id = ?", (wid,))
    if other_b != other_a or len(other_a) != 1:
        return {"result": "others"}
    if not rows(final_db_path, "SELECT id FROM workflows WHERE id = ?", (wid,)):
        return {"result": "others"}
    return {"result": "complete"}
