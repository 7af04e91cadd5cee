def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def q(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return conn.execute(sql, params).fetchall()
        finally:
            conn.close()

    pl_sql = "SELECT id, visibility FROM playlists WHERE owner_user_id = 1 AND lower(trim(title)) = 'best of techtalk daily'"
    if q(initial_db_path, pl_sql):
        return {"result": "others"}
    after = q(final_db_path, pl_sql)
    if len(after) != 1 or after[0][1] != "public":
        return {"result": "others"}
    playlist_id = after[0][0]
    expected = [r[0] for r in q(initial_db_path,
                                "SELECT v.id FROM videos v JOIN channels c ON c.id = v.channel_id "
                                "WHERE c.name = 'TechTalk Daily' AND v.visibility = 'public' AND v.status = 'published' "
                                "ORDER BY v.view_count DESC LIMIT 3")]
    actual = [r[0] for r in q(final_db_path, "SELECT video_id FROM playlist_items WHERE playlist_id = ? ORDER BY position, id", (playlist_id,))]
    if len(expected) != 3 or actual != expected:
        return {"result": "others"}
    rest = "SELECT id, playlist_id, video_id, position FROM playlist_items WHERE playlist_id != ? ORDER BY id"
    if q(initial_db_path, rest, (playlist_id,)) != q(final_db_path, rest, (playlist_id,)):
        return {"result": "others"}
    return {"result": "complete"}
