def verify_task(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute(sql, params).fetchall()]
        conn.close()
        return rows

    sql = ("SELECT id, code, description, discount_type, discount_value, min_order_total, max_redemptions, "
           "times_redeemed, is_active, expires_at FROM coupons WHERE UPPER(code) LIKE '%SPRING%'")
    return {
        "spring_coupons_before": query(initial_db_path, sql),
        "spring_coupons_after": query(final_db_path, sql),
        "coupon_count_before": query(initial_db_path, "SELECT COUNT(*) AS n FROM coupons")[0]["n"],
        "coupon_count_after": query(final_db_path, "SELECT COUNT(*) AS n FROM coupons")[0]["n"],
        "final_answer": final_answer,
    }
