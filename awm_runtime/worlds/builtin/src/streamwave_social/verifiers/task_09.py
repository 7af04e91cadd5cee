def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    pl = q(initial_db_path, "SELECT id FROM playlists WHERE owner_user_id = 1 AND title = 'Watch Later'")
    ch = q(initial_db_path, "SELECT id FROM channels WHERE name = 'TechTalk Daily'")
    if len(pl) != 1 or len(ch) != 1:
        return {"result": "others"}
    playlist_id = pl[0][0]
    channel_id = ch[0][0]
    items_sql = "SELECT pi.video_id, v.channel_id FROM playlist_items pi JOIN videos v ON v.id = pi.video_id WHERE pi.playlist_id = ?"
    before = q(initial_db_path, items_sql, (playlist_id,))
    after_ids = set(r[0] for r in q(final_db_path, items_sql, (playlist_id,)))
    targets = [vid for vid, cid in before if cid == channel_id]
    keep = [vid for vid, cid in before if cid != channel_id]
    if not targets:
        return {"result": "others"}
    if any(vid in after_ids for vid in targets):
        return {"result": "others"}
    if any(vid not in after_ids for vid in keep):
        return {"result": "others"}
    for vid in targets:
        r = q(final_db_path, "SELECT reaction FROM video_reactions WHERE user_id = 1 AND video_id = ?", (vid,))
        if len(r) != 1 or r[0][0] != "like":
            return {"result": "others"}
    other_reactions = "SELECT video_id, reaction FROM video_reactions WHERE user_id = 1 AND video_id NOT IN (%s) ORDER BY video_id" % ",".join(str(v) for v in targets)
    if q(initial_db_path, other_reactions) != q(final_db_path, other_reactions):
        return {"result": "others"}
    sub_sql = "SELECT notifications_enabled FROM subscriptions WHERE subscriber_user_id = 1 AND channel_id = ?"
    s_before = q(initial_db_path, sub_sql, (channel_id,))
    s_after = q(final_db_path, sub_sql, (channel_id,))
    if len(s_before) != 1 or len(s_after) != 1 or s_before[0][0] != 0 or s_after[0][0] != 1:
        return {"result": "others"}
    return {"result": "complete"}
