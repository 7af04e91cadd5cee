def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    spam = q(initial_db_path, "SELECT id FROM users WHERE username = 'spambot_4421'")
    if len(spam) != 1:
        return {"result": "others"}
    spam_id = spam[0][0]
    targets = set(r[0] for r in q(initial_db_path,
                                  "SELECT cm.id FROM comments cm JOIN videos v ON v.id = cm.video_id "
                                  "JOIN channels c ON c.id = v.channel_id WHERE c.owner_user_id = 1 AND cm.user_id = ?", (spam_id,)))
    if not targets:
        return {"result": "others"}
    before = {r[0]: r for r in q(initial_db_path, "SELECT id, video_id, user_id, body FROM comments")}
    after = {r[0]: r for r in q(final_db_path, "SELECT id, video_id, user_id, body FROM comments")}
    if any(t in after for t in targets):
        return {"result": "others"}
    for cid, row in before.items():
        if cid in targets:
            continue
        if after.get(cid) != row:
            return {"result": "others"}
    old_reports = set(r[0] for r in q(initial_db_path, "SELECT id FROM reports"))
    new_reports = [r for r in q(final_db_path, "SELECT id, reporter_user_id, target_type, target_id, reason FROM reports") if r[0] not in old_reports]
    reported = set(r[3] for r in new_reports if r[1] == 1 and r[2] == "comment" and r[4] == "spam")
    if not targets.issubset(reported):
        return {"result": "others"}
    return {"result": "complete"}
