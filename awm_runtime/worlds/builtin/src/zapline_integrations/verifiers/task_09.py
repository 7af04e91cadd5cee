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

    z = rows(final_db_path, "SELECT id FROM zaps WHERE name = ?", ("Weekly Sales Report Email",))
    if len(z) != 1:
        return {"result": "others"}
    q = "SELECT * FROM schedules WHERE zap_id = ?"
    b = rows(initial_db_path, q, (z[0]["id"],))
    a = rows(final_db_path, q, (z[0]["id"],))
    if len(b) != 1 or len(a) != 1:
        return {"result": "others"}
    b, a = b[0], a[0]
    if norm(b["day_of_week"]) == "monday" and norm(b["time_of_day"]) == "08:30":
        return {"result": "others"}
    if a["frequency"] != "weekly" or norm(a["day_of_week"]) != "monday":
        return {"result": "others"}
    t = norm(a["time_of_day"])
    if t not in ("08:30", "8:30"):
        return {"result": "others"}
    if a["timezone"] != "Europe/London":
        return {"result": "others"}
    oq = "SELECT * FROM schedules WHERE zap_id != ? ORDER BY id"
    if rows(initial_db_path, oq, (z[0]["id"],)) != rows(final_db_path, oq, (z[0]["id"],)):
        return {"result": "others"}
    return {"result": "complete"}
