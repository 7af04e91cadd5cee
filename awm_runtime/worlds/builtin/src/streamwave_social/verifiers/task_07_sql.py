def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    top = ("SELECT v.id, v.title, v.visibility, v.view_count FROM videos v JOIN channels c ON c.id = v.channel_id "
           "WHERE c.name = 'TechTalk Daily' ORDER BY v.view_count DESC")
    pls = "SELECT id, title, visibility FROM playlists WHERE owner_user_id = 1 ORDER BY id"
    items = ("SELECT p.title AS playlist_title, pi.position, v.id AS video_id, v.title FROM playlist_items pi "
             "JOIN playlists p ON p.id = pi.playlist_id JOIN videos v ON v.id = pi.video_id "
             "WHERE p.owner_user_id = 1 AND lower(p.title) LIKE '%techtalk%' ORDER BY pi.position")
    return {
        "techtalk_videos_by_views": rows(initial_db_path, top),
        "my_playlists_before": rows(initial_db_path, pls),
        "my_playlists_after": rows(final_db_path, pls),
        "techtalk_playlist_items_after": rows(final_db_path, items),
        "final_answer": final_answer,
    }
