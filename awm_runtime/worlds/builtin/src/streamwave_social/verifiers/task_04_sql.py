def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    subs = ("SELECT s.id, c.name AS channel_name, s.notifications_enabled FROM subscriptions s "
            "JOIN channels c ON c.id = s.channel_id WHERE s.subscriber_user_id = 1 ORDER BY s.id")
    items = ("SELECT pi.id, pi.position, v.title FROM playlist_items pi JOIN playlists p ON p.id = pi.playlist_id "
             "JOIN videos v ON v.id = pi.video_id WHERE p.owner_user_id = 1 AND p.title = 'Watch Later' ORDER BY pi.position")
    return {
        "my_subscriptions_before": rows(initial_db_path, subs),
        "my_subscriptions_after": rows(final_db_path, subs),
        "watch_later_before": rows(initial_db_path, items),
        "watch_later_after": rows(final_db_path, items),
        "final_answer": final_answer,
    }
