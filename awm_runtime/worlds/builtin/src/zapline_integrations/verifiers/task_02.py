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

    label = "Mailchimp - Old Newsletter"
    b = rows(initial_db_path, "SELECT id FROM connections WHERE label = ?", (label,))
    if len(b) != 1:
        return {"result": "others"}
    cid = b[0]["id"]
    if rows(final_db_path, "SELECT id FROM connections WHERE id = ? OR label = ?", (cid, label)):
        return {"result": "others"}
    q = "SELECT * FROM connections WHERE id != ? ORDER BY id"
    if rows(initial_db_path, q, (cid,)) != rows(final_db_path, q, (cid,)):
        return {"result": "others"}
    zq = "SELECT id, status, trigger_connection_id FROM zaps ORDER BY id"
    if rows(initial_db_path, zq) != rows(final_db_path, zq):
        return {"result": "others"}
    return {"result": "complete"}
