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

    q = "SELECT id, name, status FROM zaps ORDER BY id"
    before = rows(initial_db_path, q)
    after = rows(final_db_path, q)
    tb = [z for z in before if z["name"] == "New Typeform Lead to HubSpot"]
    ta = [z for z in after if z["name"] == "New Typeform Lead to HubSpot"]
    if len(tb) != 1 or len(ta) != 1:
        return {"result": "others"}
    if tb[0]["status"] != "on" or ta[0]["status"] != "off":
        return {"result": "others"}
    if [z for z in before if z["id"] != tb[0]["id"]] != [z for z in after if z["id"] != ta[0]["id"]]:
        return {"result": "others"}
    steps_q = "SELECT id, position, connection_id FROM zap_steps WHERE zap_id = ? ORDER BY id"
    if rows(initial_db_path, steps_q, (tb[0]["id"],)) != rows(final_db_path, steps_q, (tb[0]["id"],)):
        return {"result": "others"}
    return {"result": "complete"}
