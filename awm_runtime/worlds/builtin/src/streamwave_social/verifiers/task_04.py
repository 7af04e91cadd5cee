def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    sub_sql = ("SELECT s.id, s.notifications_enabled FROM subscriptions s JOIN channels c ON c.id = s.channel_id "
               "WHERE s.subscriber_user_id = 1 AND c.name = 'Pixel Forge Gaming'")
    if q(initial_db_path, sub_sql):
        return {"result": "others"}
    sub_after = q(final_db_path, sub_sql)
    if len(sub_after) != 1 or sub_after[0][1] != 1:
        return {"result": "others"}
    items_sql = ("SELECT v.title FROM playlist_items pi JOIN playlists p ON p.id = pi.playlist_id "
                 "JOIN videos v ON v.id = pi.video_id WHERE p.owner_user_id = 1 AND p.title = 'Watch Later'")
    before = [r[0] for r in q(initial_db_path, items_sql)]
    after = [r[0] for r in q(final_db_path, items_sql)]
    target = "Speedrunning Celeste Any% Explained"
    if target in before or after.count(target) != 1:
        return {"result": "others"}
    if any(t not in after for t in before):
        return {"result": "others"}
    other_subs = "SELECT id, subscriber_user_id, channel_id, notifications_enabled FROM subscriptions WHERE id != ? ORDER BY id"
    if q(initial_db_path, other_subs, (sub_after[0][0],)) != q(final_db_path, other_subs, (sub_after[0][0],)):
        return {"result": "others"}
    return {"result": "complete"}
