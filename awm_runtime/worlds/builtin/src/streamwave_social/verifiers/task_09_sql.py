def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    items = ("SELECT pi.id, pi.position, v.id AS video_id, v.title, c.name AS channel_name FROM playlist_items pi "
             "JOIN playlists p ON p.id = pi.playlist_id JOIN videos v ON v.id = pi.video_id JOIN channels c ON c.id = v.channel_id "
             "WHERE p.owner_user_id = 1 AND p.title = 'Watch Later' ORDER BY pi.position")
    reactions = ("SELECT r.video_id, v.title, r.reaction, v.like_count FROM video_reactions r JOIN videos v ON v.id = r.video_id "
                 "WHERE r.user_id = 1 ORDER BY r.video_id")
    sub = ("SELECT s.id, s.notifications_enabled FROM subscriptions s JOIN channels c ON c.id = s.channel_id "
           "WHERE s.subscriber_user_id = 1 AND c.name = 'TechTalk Daily'")
    return {
        "watch_later_before": rows(initial_db_path, items),
        "watch_later_after": rows(final_db_path, items),
        "my_reactions_before": rows(initial_db_path, reactions),
        "my_reactions_after": rows(final_db_path, reactions),
        "techtalk_subscription_before": rows(initial_db_path, sub),
        "techtalk_subscription_after": rows(final_db_path, sub),
        "final_answer": final_answer,
    }
