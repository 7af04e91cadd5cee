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

    q = "SELECT id, zap_id, status FROM zap_runs ORDER BY id"
    if rows(initial_db_path, q) != rows(final_db_path, q):
        return {"result": "others"}
    run = rows(final_db_path, "SELECT r.id FROM zap_runs r JOIN zaps z ON z.id = r.zap_id WHERE z.name = ? AND r.status = 'error' ORDER BY r.started_at DESC, r.id DESC LIMIT 1", ("Shopify Orders to Google Sheets",))
    if not run:
        return {"result": "others"}
    failed = rows(final_db_path, "SELECT s.title, s.position, a.http_status FROM run_attempts a JOIN zap_steps s ON s.id = a.step_id WHERE a.run_id = ? AND a.status = 'error'", (run[0]["id"],))
    if len(failed) != 1:
        return {"result": "others"}
    f = failed[0]
    ans = norm(final_answer)
    if not ans or str(f["http_status"]) not in re.findall(r"\d+", ans):
        return {"result": "others"}
    title = norm(f["title"])
    app_word = title.split(" in ")[-1] if " in " in title else title
    if title in ans or (app_word in ans and ("message" in ans or "channel" in ans)):
        return {"result": "complete"}
    return {"result": "others"}
