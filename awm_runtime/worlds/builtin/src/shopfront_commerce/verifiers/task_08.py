def verify_task_completion(initial_db_path: str, final_db_path: str, final_answer: str | None = None) -> dict:
    import sqlite3

    def query(path, sql, params=()):
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = conn.execute(sql, params).fetchall()
        conn.close()
        return rows

    order = query(initial_db_path, "SELECT id, status, total FROM orders WHERE order_number = 'SF-10007'")
    if len(order) != 1:
        return {"result": "others"}
    order_id, status_before, total = order[0]
    status_after = query(final_db_path, "SELECT status FROM orders WHERE id = ?", (order_id,))
    if status_before == "refunded" or not status_after or status_after[0][0] != "refunded":
        return {"result": "others"}

    pay_sql = "SELECT id, amount, status FROM payments WHERE order_id = ? AND status <> 'voided' ORDER BY id"
    pays_before = query(initial_db_path, pay_sql, (order_id,))
    if len(pays_before) != 1:
        return {"result": "others"}
    payment_id, pay_amount, _ = pays_before[0]
    pay_after = query(final_db_path, "SELECT status FROM payments WHERE id = ?", (payment_id,))
    if not pay_after or pay_after[0][0] != "refunded":
        return {"result": "others"}

    ref_sql = "SELECT id, payment_id, amount, reason, status FROM refunds WHERE order_id = ?"
    before_ids = {r[0] for r in query(initial_db_path, ref_sql, (order_id,))}
    new_refunds = [r for r in query(final_db_path, ref_sql, (order_id,)) if r[0] not in before_ids]
    if not new_refunds:
        return {"result": "others"}
    refunded = sum(r[2] for r in new_refunds if r[4] == "processed" and r[1] == payment_id)
    if abs(refunded - pay_amount) > 0.01:
        return {"result": "others"}
    if not any("unopened" in (r[3] or "").lower() and "late" in (r[3] or "").lower() for r in new_refunds):
        return {"result": "others"}

    items = query(initial_db_path, "SELECT variant_id, SUM(quantity) FROM order_items WHERE order_id = ? GROUP BY variant_id", (order_id,))
    if not items:
        return {"result": "others"}
    for variant_id, qty in items:
        sb = query(initial_db_path, "SELECT stock_quantity FROM product_variants WHERE id = ?", (variant_id,))
        sa = query(final_db_path, "SELECT stock_quantity FROM product_variants WHERE id = ?", (variant_id,))
        if not sb or not sa or sa[0][0] != sb[0][0] + qty:
            return {"result": "others"}

    coupon_sql = ("SELECT discount_type, discount_value, max_redemptions, is_active FROM coupons "
                  "WHERE UPPER(TRIM(code)) = 'SORRY-ELENA'")
    if query(initial_db_path, coupon_sql):
        return {"result": "others"}
    coupon = query(final_db_path, coupon_sql)
    if len(coupon) != 1:
        return {"result": "others"}
    ctype, cvalue, cmax, cactive = coupon[0]
    if ctype != "fixed" or abs(float(cvalue) - 10.0) > 0.005 or cmax != 1 or cactive != 1:
        return {"result": "others"}
    return {"result": "complete"}
