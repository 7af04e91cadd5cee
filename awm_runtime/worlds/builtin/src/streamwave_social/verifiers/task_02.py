def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sql = ("SELECT s.id FROM subscriptions s JOIN channels c ON c.id = s.channel_id "
           "WHERE s.subscriber_user_id = 1 AND c.name = 'Coin Sense Finance'")
    before = q(initial_db_path, sql)
    after = q(final_db_path, sql)
    if len(before) != 1 or after:
        return {"result": "others"}
    rest = "SELECT id, subscriber_user_id, channel_id, notifications_enabled FROM subscriptions WHERE id != ? ORDER BY id"
    if q(initial_db_path, rest, (before[0][0],)) != q(final_db_path, rest, (before[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
