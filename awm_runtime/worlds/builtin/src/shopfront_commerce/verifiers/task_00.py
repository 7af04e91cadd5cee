def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    sql = ("SELECT discount_type, discount_value, min_order_total, max_redemptions, is_active, times_redeemed "
           "FROM coupons WHERE UPPER(TRIM(code)) = 'SPRING15'")
    before = query(initial_db_path, sql)
    after = query(final_db_path, sql)
    if before or len(after) != 1:
        return {"result": "others"}
    dtype, value, min_total, max_red, active, redeemed = after[0]
    if dtype != "percent" or value is None or abs(float(value) - 15.0) > 1e-6:
        return {"result": "others"}
    if min_total is None or abs(float(min_total) - 60.0) > 0.005:
        return {"result": "others"}
    if max_red != 250 or active != 1 or redeemed != 0:
        return {"result": "others"}
    n_before = query(initial_db_path, "SELECT COUNT(*) FROM coupons")[0][0]
    n_after = query(final_db_path, "SELECT COUNT(*) FROM coupons")[0][0]
    if n_after != n_before + 1:
        return {"result": "others"}
    return {"result": "complete"}
