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

    label = "Salesforce - Production"
    cb = rows(initial_db_path, "SELECT * FROM connections WHERE label = ?", (label,))
    ca = rows(final_db_path, "SELECT * FROM connections WHERE label = ?", (label,))
    if len(cb) != 1 or len(ca) != 1 or cb[0]["status"] == "active" or ca[0]["status"] != "active":
        return {"result": "others"}
    cid = cb[0]["id"]
    zq = "SELECT DISTINCT z.id, z.status FROM zaps z LEFT JOIN zap_steps s ON s.zap_id = z.id WHERE z.trigger_connection_id = ? OR s.connection_id = ? ORDER BY z.id"
    using = rows(initial_db_path, zq, (cid, cid))
    after = {z["id"]: z for z in rows(final_db_path, "SELECT id, status FROM zaps")}
    errored = [z["id"] for z in using if z["status"] == "errored"]
    if not errored:
        return {"result": "others"}
    for z in using:
        if z["id"] not in after:
            return {"result": "others"}
        if z["status"] == "errored":
            if after[z["id"]]["status"] != "on":
                return {"result": "others"}
        elif after[z["id"]]["status"] != z["status"]:
            return {"result": "others"}
    max_before = rows(initial_db_path, "SELECT COALESCE(MAX(id), 0) AS m FROM zap_runs")[0]["m"]
    for zid in errored:
        latest = rows(initial_db_path, "SELECT id FROM zap_runs WHERE zap_id = ? AND status = 'error' ORDER BY started_at DESC, id DESC LIMIT 1", (zid,))
        if not latest:
            return {"result": "others"}
        replays = rows(final_db_path, "SELECT id, status FROM zap_runs WHERE id > ? AND zap_id = ? AND replayed_from_run_id = ?", (max_before, zid, latest[0]["id"]))
        if not any(r["status"] == "success" for r in replays):
            return {"result": "others"}
    others_q = "SELECT id, status FROM zaps WHERE id NOT IN (SELECT DISTINCT z.id FROM zaps z LEFT JOIN zap_steps s ON s.zap_id = z.id WHERE z.trigger_connection_id = ? OR s.connection_id = ?) ORDER BY id"
    if rows(initial_db_path, others_q, (cid, cid)) != rows(final_db_path, others_q, (cid, cid)):
        return {"result": "others"}
    return {"result": "complete"}
