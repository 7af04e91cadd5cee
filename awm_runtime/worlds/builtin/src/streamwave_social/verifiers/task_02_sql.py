def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def rows(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        try:
            return [dict(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()

    sql = ("SELECT s.id, c.name AS channel_name, s.notifications_enabled FROM subscriptions s "
           "JOIN channels c ON c.id = s.channel_id WHERE s.subscriber_user_id = 1 ORDER BY s.id")
    count = "SELECT subscriber_count FROM channels WHERE name = 'Coin Sense Finance'"
    return {
        "my_subscriptions_before": rows(initial_db_path, sql),
        "my_subscriptions_after": rows(final_db_path, sql),
        "coin_sense_subscriber_count_before": rows(initial_db_path, count),
        "coin_sense_subscriber_count_after": rows(final_db_path, count),
        "final_answer": final_answer,
    }
