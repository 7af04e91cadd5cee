import os
from typing import List, Optional
from datetime import datetime, timezone

from fastapi import FastAPI, Query, Path, Body
from pydantic import BaseModel, Field, ConfigDict, EmailStr
from sqlalchemy import (
    create_engine, Column, Integer, String, Float, DateTime, ForeignKey, Text, UniqueConstraint, CheckConstraint, func, or_
)
from sqlalchemy.orm import declarative_base, sessionmaker

engine = create_engine(os.getenv("DATABASE_PATH", "sqlite:///shopfront_commerce.db"), connect_args={"check_same_thread": False})
SessionLocal = sessionmaker(bind=engine, expire_on_commit=False)
Base = declarative_base()

app = FastAPI(
    title="Shopfront Commerce API",
    description="Back-office API for the Shopfront online store: catalogue, inventory, customers, carts, orders, payments, coupons and reviews.",
    version="1.0.0",
)

CURRENT_USER_ID = 1
FREE_SHIPPING_THRESHOLD = 75.0
FLAT_SHIPPING_RATE = 6.95
TAX_RATE = 0.08


# ---------------------------------------------------------------------------
# ORM models (mirror schema.sql)
# ---------------------------------------------------------------------------

class User(Base):
    __tablename__ = "users"
    id = Column(Integer, primary_key=True)
    username = Column(String, unique=True, nullable=False)
    email = Column(String, unique=True, nullable=False)
    full_name = Column(String, nullable=False)
    role = Column(String, nullable=False, default="staff")
    is_active = Column(Integer, nullable=False, default=1)
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (CheckConstraint("role IN ('owner', 'admin', 'staff')"),)


class Category(Base):
    __tablename__ = "categories"
    id = Column(Integer, primary_key=True)
    name = Column(String, unique=True, nullable=False)
    slug = Column(String, unique=True, nullable=False)
    parent_id = Column(Integer, ForeignKey("categories.id", ondelete="SET NULL"))
    description = Column(Text)
    is_active = Column(Integer, nullable=False, default=1)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Product(Base):
    __tablename__ = "products"
    id = Column(Integer, primary_key=True)
    category_id = Column(Integer, ForeignKey("categories.id", ondelete="SET NULL"))
    name = Column(String, unique=True, nullable=False)
    slug = Column(String, unique=True, nullable=False)
    brand = Column(String)
    description = Column(Text)
    base_price = Column(Float, nullable=False)
    status = Column(String, nullable=False, default="draft")
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (CheckConstraint("status IN ('draft', 'active', 'archived')"),)


class ProductVariant(Base):
    __tablename__ = "product_variants"
    id = Column(Integer, primary_key=True)
    product_id = Column(Integer, ForeignKey("products.id", ondelete="CASCADE"), nullable=False)
    sku = Column(String, unique=True, nullable=False)
    name = Column(String, nullable=False)
    price = Column(Float, nullable=False)
    stock_quantity = Column(Integer, nullable=False, default=0)
    weight_grams = Column(Integer)
    is_active = Column(Integer, nullable=False, default=1)
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (CheckConstraint("stock_quantity >= 0"),)


class InventoryAdjustment(Base):
    __tablename__ = "inventory_adjustments"
    id = Column(Integer, primary_key=True)
    variant_id = Column(Integer, ForeignKey("product_variants.id", ondelete="CASCADE"), nullable=False)
    delta = Column(Integer, nullable=False)
    reason = Column(String, nullable=False)
    note = Column(Text)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())


class Customer(Base):
    __tablename__ = "customers"
    id = Column(Integer, primary_key=True)
    first_name = Column(String, nullable=False)
    last_name = Column(String, nullable=False)
    email = Column(String, unique=True, nullable=False)
    phone = Column(String)
    loyalty_tier = Column(String, nullable=False, default="bronze")
    marketing_opt_in = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Address(Base):
    __tablename__ = "addresses"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, ForeignKey("customers.id", ondelete="CASCADE"), nullable=False)
    label = Column(String, nullable=False)
    recipient_name = Column(String, nullable=False)
    line1 = Column(String, nullable=False)
    line2 = Column(String)
    city = Column(String, nullable=False)
    region = Column(String)
    postal_code = Column(String, nullable=False)
    country_code = Column(String, nullable=False, default="US")
    is_default = Column(Integer, nullable=False, default=0)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Coupon(Base):
    __tablename__ = "coupons"
    id = Column(Integer, primary_key=True)
    code = Column(String, unique=True, nullable=False)
    description = Column(Text)
    discount_type = Column(String, nullable=False)
    discount_value = Column(Float, nullable=False)
    min_order_total = Column(Float, nullable=False, default=0)
    max_redemptions = Column(Integer)
    times_redeemed = Column(Integer, nullable=False, default=0)
    is_active = Column(Integer, nullable=False, default=1)
    expires_at = Column(DateTime)
    created_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (CheckConstraint("discount_type IN ('percent', 'fixed')"),)


class Cart(Base):
    __tablename__ = "carts"
    id = Column(Integer, primary_key=True)
    customer_id = Column(Integer, ForeignKey("customers.id", ondelete="CASCADE"), nullable=False)
    status = Column(String, nullable=False, default="active")
    coupon_id = Column(Integer, ForeignKey("coupons.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    updated_at = Column(DateTime, nullable=False, default=func.now())


class CartItem(Base):
    __tablename__ = "cart_items"
    id = Column(Integer, primary_key=True)
    cart_id = Column(Integer, ForeignKey("carts.id", ondelete="CASCADE"), nullable=False)
    variant_id = Column(Integer, ForeignKey("product_variants.id", ondelete="CASCADE"), nullable=False)
    quantity = Column(Integer, nullable=False)
    unit_price = Column(Float, nullable=False)
    added_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("cart_id", "variant_id"),)


class Order(Base):
    __tablename__ = "orders"
    id = Column(Integer, primary_key=True)
    order_number = Column(String, unique=True, nullable=False)
    customer_id = Column(Integer, ForeignKey("customers.id", ondelete="RESTRICT"), nullable=False)
    cart_id = Column(Integer, ForeignKey("carts.id", ondelete="SET NULL"))
    shipping_address_id = Column(Integer, ForeignKey("addresses.id", ondelete="SET NULL"))
    coupon_id = Column(Integer, ForeignKey("coupons.id", ondelete="SET NULL"))
    status = Column(String, nullable=False, default="pending")
    subtotal = Column(Float, nullable=False)
    discount_total = Column(Float, nullable=False, default=0)
    shipping_total = Column(Float, nullable=False, default=0)
    tax_total = Column(Float, nullable=False, default=0)
    total = Column(Float, nullable=False)
    carrier = Column(String)
    tracking_number = Column(String)
    notes = Column(Text)
    placed_at = Column(DateTime, nullable=False, default=func.now())
    shipped_at = Column(DateTime)
    updated_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (
        CheckConstraint("status IN ('pending', 'paid', 'shipped', 'delivered', 'cancelled', 'refunded')"),
    )


class OrderItem(Base):
    __tablename__ = "order_items"
    id = Column(Integer, primary_key=True)
    order_id = Column(Integer, ForeignKey("orders.id", ondelete="CASCADE"), nullable=False)
    variant_id = Column(Integer, ForeignKey("product_variants.id", ondelete="SET NULL"))
    product_name = Column(String, nullable=False)
    variant_name = Column(String, nullable=False)
    sku = Column(String, nullable=False)
    quantity = Column(Integer, nullable=False)
    unit_price = Column(Float, nullable=False)
    line_total = Column(Float, nullable=False)


class Payment(Base):
    __tablename__ = "payments"
    id = Column(Integer, primary_key=True)
    order_id = Column(Integer, ForeignKey("orders.id", ondelete="CASCADE"), nullable=False)
    method = Column(String, nullable=False)
    amount = Column(Float, nullable=False)
    currency = Column(String, nullable=False, default="USD")
    status = Column(String, nullable=False)
    transaction_ref = Column(String, unique=True, nullable=False)
    created_at = Column(DateTime, nullable=False, default=func.now())


class Refund(Base):
    __tablename__ = "refunds"
    id = Column(Integer, primary_key=True)
    order_id = Column(Integer, ForeignKey("orders.id", ondelete="CASCADE"), nullable=False)
    payment_id = Column(Integer, ForeignKey("payments.id", ondelete="CASCADE"), nullable=False)
    amount = Column(Float, nullable=False)
    reason = Column(Text, nullable=False)
    status = Column(String, nullable=False, default="processed")
    processed_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())


class ProductReview(Base):
    __tablename__ = "product_reviews"
    id = Column(Integer, primary_key=True)
    product_id = Column(Integer, ForeignKey("products.id", ondelete="CASCADE"), nullable=False)
    customer_id = Column(Integer, ForeignKey("customers.id", ondelete="CASCADE"), nullable=False)
    rating = Column(Integer, nullable=False)
    title = Column(String, nullable=False)
    body = Column(Text)
    status = Column(String, nullable=False, default="pending")
    moderated_by_user_id = Column(Integer, ForeignKey("users.id", ondelete="SET NULL"))
    created_at = Column(DateTime, nullable=False, default=func.now())
    __table_args__ = (UniqueConstraint("product_id", "customer_id"), CheckConstraint("rating BETWEEN 1 AND 5"))


# ---------------------------------------------------------------------------
# Pydantic schemas
# ---------------------------------------------------------------------------

class DeleteResponse(BaseModel):
    id: int = Field(..., description="ID of the deleted record", examples=[12])
    deleted: bool = Field(..., description="True when the record was removed", examples=[True])


class UserResponse(BaseModel):
    id: int = Field(..., description="Staff user ID", examples=[1])
    username: str = Field(..., description="Login name", examples=["alex.morgan"])
    email: str = Field(..., description="Work email", examples=["alex.morgan@shopfront.example"])
    full_name: str = Field(..., description="Display name", examples=["Alex Morgan"])
    role: str = Field(..., description="Role: owner, admin or staff", examples=["owner"])
    is_active: bool = Field(..., description="Whether the account is active", examples=[True])
    created_at: Optional[datetime] = Field(None, description="When the account was created")
    model_config = ConfigDict(from_attributes=True)


class UserListResponse(BaseModel):
    users: List[UserResponse] = Field(..., description="Matching staff users")


class CategoryResponse(BaseModel):
    id: int = Field(..., description="Category ID", examples=[6])
    name: str = Field(..., description="Category name", examples=["Audio"])
    slug: str = Field(..., description="URL slug", examples=["audio"])
    parent_id: Optional[int] = Field(None, description="Parent category ID, null for top-level categories", examples=[5])
    description: Optional[str] = Field(None, description="Category description")
    is_active: bool = Field(..., description="Whether the category is visible in the storefront", examples=[True])
    model_config = ConfigDict(from_attributes=True)


class CategoryListResponse(BaseModel):
    categories: List[CategoryResponse] = Field(..., description="Matching categories")


class CategoryCreateRequest(BaseModel):
    name: str = Field(..., description="Unique category name", examples=["Kitchen Essentials"])
    slug: Optional[str] = Field(None, description="URL slug; derived from the name when omitted", examples=["kitchen-essentials"])
    parent_id: Optional[int] = Field(None, description="Parent category ID for a subcategory", examples=[7])
    description: Optional[str] = Field(None, description="Short description", examples=["Everyday prep tools"])
    is_active: bool = Field(True, description="Visible in the storefront", examples=[True])


class CategoryUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, description="New name", examples=["Audio & Sound"])
    slug: Optional[str] = Field(None, description="New slug", examples=["audio-sound"])
    parent_id: Optional[int] = Field(None, description="New parent category ID", examples=[5])
    description: Optional[str] = Field(None, description="New description")
    is_active: Optional[bool] = Field(None, description="Visibility flag", examples=[False])


class VariantResponse(BaseModel):
    id: int = Field(..., description="Variant ID", examples=[14])
    product_id: int = Field(..., description="Parent product ID", examples=[5])
    sku: str = Field(..., description="Stock keeping unit, unique", examples=["AER-BUD-WHT"])
    name: str = Field(..., description="Variant label (size / colour)", examples=["White"])
    price: float = Field(..., description="Unit price in USD", examples=[79.99])
    stock_quantity: int = Field(..., description="Units on hand", examples=[3])
    weight_grams: Optional[int] = Field(None, description="Shipping weight in grams", examples=[55])
    is_active: bool = Field(..., description="Whether the variant can be sold", examples=[True])
    model_config = ConfigDict(from_attributes=True)


class VariantListResponse(BaseModel):
    variants: List[VariantResponse] = Field(..., description="Matching variants")


class ProductResponse(BaseModel):
    id: int = Field(..., description="Product ID", examples=[5])
    category_id: Optional[int] = Field(None, description="Category ID", examples=[6])
    name: str = Field(..., description="Product name", examples=["Aeris Wireless Earbuds"])
    slug: str = Field(..., description="URL slug", examples=["aeris-wireless-earbuds"])
    brand: Optional[str] = Field(None, description="Brand", examples=["Sonora"])
    description: Optional[str] = Field(None, description="Marketing description")
    base_price: float = Field(..., description="List price in USD", examples=[79.99])
    status: str = Field(..., description="draft, active or archived", examples=["active"])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last update time")
    model_config = ConfigDict(from_attributes=True)


class ProductDetailResponse(ProductResponse):
    variants: List[VariantResponse] = Field(default_factory=list, description="Variants of this product")


class ProductListResponse(BaseModel):
    products: List[ProductResponse] = Field(..., description="Matching products")


class ProductCreateRequest(BaseModel):
    name: str = Field(..., description="Unique product name", examples=["Linen Apron"])
    category_id: Optional[int] = Field(None, description="Category ID", examples=[7])
    slug: Optional[str] = Field(None, description="URL slug; derived from the name when omitted", examples=["linen-apron"])
    brand: Optional[str] = Field(None, description="Brand name", examples=["Hearthware"])
    description: Optional[str] = Field(None, description="Marketing description")
    base_price: float = Field(..., ge=0, description="List price in USD", examples=[34.0])
    status: str = Field("draft", pattern="^(draft|active|archived)$", description="draft, active or archived", examples=["active"])


class ProductUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, description="New name")
    category_id: Optional[int] = Field(None, description="New category ID", examples=[7])
    brand: Optional[str] = Field(None, description="New brand")
    description: Optional[str] = Field(None, description="New description")
    base_price: Optional[float] = Field(None, ge=0, description="New list price in USD", examples=[26.0])
    status: Optional[str] = Field(None, pattern="^(draft|active|archived)$", description="New status", examples=["archived"])


class VariantCreateRequest(BaseModel):
    product_id: int = Field(..., description="Parent product ID", examples=[1])
    sku: str = Field(..., description="Unique SKU", examples=["TRL-JKT-XL-NVY"])
    name: str = Field(..., description="Variant label", examples=["Size XL / Navy"])
    price: float = Field(..., ge=0, description="Unit price in USD", examples=[119.0])
    stock_quantity: int = Field(0, ge=0, description="Initial units on hand", examples=[10])
    weight_grams: Optional[int] = Field(None, gt=0, description="Shipping weight in grams", examples=[600])
    is_active: bool = Field(True, description="Whether the variant can be sold")


class VariantUpdateRequest(BaseModel):
    name: Optional[str] = Field(None, description="New label")
    price: Optional[float] = Field(None, ge=0, description="New unit price in USD", examples=[69.99])
    stock_quantity: Optional[int] = Field(None, ge=0, description="Absolute units on hand", examples=[20])
    weight_grams: Optional[int] = Field(None, gt=0, description="New shipping weight in grams")
    is_active: Optional[bool] = Field(None, description="Whether the variant can be sold")


class InventoryAdjustmentRequest(BaseModel):
    delta: int = Field(..., description="Units to add (positive) or remove (negative); must not be 0", examples=[25])
    reason: str = Field(..., pattern="^(restock|sale|return|damage|correction)$", description="restock, sale, return, damage or correction", examples=["restock"])
    note: Optional[str] = Field(None, description="Free-text note such as a purchase order number", examples=["PO-2290"])


class InventoryAdjustmentResponse(BaseModel):
    id: int = Field(..., description="Adjustment ID", examples=[11])
    variant_id: int = Field(..., description="Variant ID", examples=[14])
    delta: int = Field(..., description="Units added or removed", examples=[25])
    reason: str = Field(..., description="Reason code", examples=["restock"])
    note: Optional[str] = Field(None, description="Note")
    created_by_user_id: Optional[int] = Field(None, description="Staff user who made the adjustment", examples=[1])
    created_at: Optional[datetime] = Field(None, description="When the adjustment was recorded")
    new_stock_quantity: int = Field(..., description="Units on hand after the adjustment", examples=[28])
    model_config = ConfigDict(from_attributes=True)


class CustomerResponse(BaseModel):
    id: int = Field(..., description="Customer ID", examples=[2])
    first_name: str = Field(..., description="First name", examples=["Daniel"])
    last_name: str = Field(..., description="Last name", examples=["Okafor"])
    email: str = Field(..., description="Email address", examples=["daniel.okafor@mailbox.example"])
    phone: Optional[str] = Field(None, description="Phone number", examples=["+1-312-555-0187"])
    loyalty_tier: str = Field(..., description="bronze, silver, gold or platinum", examples=["silver"])
    marketing_opt_in: bool = Field(..., description="Subscribed to marketing email", examples=[False])
    created_at: Optional[datetime] = Field(None, description="Signup time")
    model_config = ConfigDict(from_attributes=True)


class CustomerListResponse(BaseModel):
    customers: List[CustomerResponse] = Field(..., description="Matching customers")


class CustomerCreateRequest(BaseModel):
    first_name: str = Field(..., description="First name", examples=["Ava"])
    last_name: str = Field(..., description="Last name", examples=["Brooks"])
    email: EmailStr = Field(..., description="Unique email address", examples=["ava.brooks@mailbox.example"])
    phone: Optional[str] = Field(None, description="Phone number", examples=["+1-415-555-0100"])
    loyalty_tier: str = Field("bronze", pattern="^(bronze|silver|gold|platinum)$", description="Loyalty tier")
    marketing_opt_in: bool = Field(False, description="Subscribed to marketing email")


class CustomerUpdateRequest(BaseModel):
    first_name: Optional[str] = Field(None, description="First name")
    last_name: Optional[str] = Field(None, description="Last name")
    email: Optional[EmailStr] = Field(None, description="Email address")
    phone: Optional[str] = Field(None, description="Phone number")
    loyalty_tier: Optional[str] = Field(None, pattern="^(bronze|silver|gold|platinum)$", description="Loyalty tier", examples=["gold"])
    marketing_opt_in: Optional[bool] = Field(None, description="Subscribed to marketing email")


class AddressResponse(BaseModel):
    id: int = Field(..., description="Address ID", examples=[3])
    customer_id: int = Field(..., description="Owning customer ID", examples=[2])
    label: str = Field(..., description="Label such as Home or Office", examples=["Home"])
    recipient_name: str = Field(..., description="Recipient name", examples=["Daniel Okafor"])
    line1: str = Field(..., description="Street line 1", examples=["1842 W Division St"])
    line2: Optional[str] = Field(None, description="Street line 2")
    city: str = Field(..., description="City", examples=["Chicago"])
    region: Optional[str] = Field(None, description="State or region", examples=["IL"])
    postal_code: str = Field(..., description="Postal code", examples=["60622"])
    country_code: str = Field(..., description="ISO 3166-1 alpha-2 country code", examples=["US"])
    is_default: bool = Field(..., description="Default shipping address", examples=[True])
    model_config = ConfigDict(from_attributes=True)


class AddressListResponse(BaseModel):
    addresses: List[AddressResponse] = Field(..., description="Addresses of the customer")


class AddressCreateRequest(BaseModel):
    label: str = Field(..., description="Label such as Home or Office", examples=["Cabin"])
    recipient_name: str = Field(..., description="Recipient name", examples=["Daniel Okafor"])
    line1: str = Field(..., description="Street line 1", examples=["12 Lakeview Rd"])
    line2: Optional[str] = Field(None, description="Street line 2")
    city: str = Field(..., description="City", examples=["Lake Geneva"])
    region: Optional[str] = Field(None, description="State or region", examples=["WI"])
    postal_code: str = Field(..., description="Postal code", examples=["53147"])
    country_code: str = Field("US", min_length=2, max_length=2, description="ISO country code", examples=["US"])
    is_default: bool = Field(False, description="Make this the default shipping address (clears the previous default)")


class CouponResponse(BaseModel):
    id: int = Field(..., description="Coupon ID", examples=[1])
    code: str = Field(..., description="Code customers enter at checkout", examples=["WELCOME10"])
    description: Optional[str] = Field(None, description="Internal description")
    discount_type: str = Field(..., description="percent or fixed", examples=["percent"])
    discount_value: float = Field(..., description="Percent (0-100) or fixed USD amount", examples=[10.0])
    min_order_total: float = Field(..., description="Minimum subtotal required in USD", examples=[0.0])
    max_redemptions: Optional[int] = Field(None, description="Redemption cap, null for unlimited", examples=[200])
    times_redeemed: int = Field(..., description="Number of redemptions so far", examples=[4])
    is_active: bool = Field(..., description="Whether the coupon can be redeemed", examples=[True])
    expires_at: Optional[datetime] = Field(None, description="Expiry time, null for none")
    created_by_user_id: Optional[int] = Field(None, description="Staff user who created it", examples=[1])
    model_config = ConfigDict(from_attributes=True)


class CouponListResponse(BaseModel):
    coupons: List[CouponResponse] = Field(..., description="Matching coupons")


class CouponCreateRequest(BaseModel):
    code: str = Field(..., min_length=3, description="Unique coupon code (stored upper-case)", examples=["SPRING15"])
    description: Optional[str] = Field(None, description="Internal description", examples=["Spring sale"])
    discount_type: str = Field(..., pattern="^(percent|fixed)$", description="percent or fixed", examples=["percent"])
    discount_value: float = Field(..., gt=0, description="Percent (0-100) or fixed USD amount", examples=[15.0])
    min_order_total: float = Field(0.0, ge=0, description="Minimum subtotal in USD", examples=[60.0])
    max_redemptions: Optional[int] = Field(None, gt=0, description="Redemption cap; omit for unlimited", examples=[250])
    expires_at: Optional[datetime] = Field(None, description="Expiry timestamp (ISO 8601)", examples=["2026-06-30T23:59:59"])
    is_active: bool = Field(True, description="Whether the coupon can be redeemed")


class CouponUpdateRequest(BaseModel):
    description: Optional[str] = Field(None, description="Internal description")
    discount_value: Optional[float] = Field(None, gt=0, description="New discount value")
    min_order_total: Optional[float] = Field(None, ge=0, description="New minimum subtotal")
    max_redemptions: Optional[int] = Field(None, gt=0, description="New redemption cap")
    expires_at: Optional[datetime] = Field(None, description="New expiry timestamp")
    is_active: Optional[bool] = Field(None, description="Activate or deactivate", examples=[False])


class CartItemResponse(BaseModel):
    id: int = Field(..., description="Cart item ID", examples=[20])
    cart_id: int = Field(..., description="Cart ID", examples=[8])
    variant_id: int = Field(..., description="Variant ID", examples=[14])
    quantity: int = Field(..., description="Quantity", examples=[2])
    unit_price: float = Field(..., description="Unit price captured when added", examples=[79.99])
    model_config = ConfigDict(from_attributes=True)


class CartResponse(BaseModel):
    id: int = Field(..., description="Cart ID", examples=[8])
    customer_id: int = Field(..., description="Customer ID", examples=[2])
    status: str = Field(..., description="active, converted or abandoned", examples=["active"])
    coupon_id: Optional[int] = Field(None, description="Applied coupon ID", examples=[1])
    created_at: Optional[datetime] = Field(None, description="Creation time")
    updated_at: Optional[datetime] = Field(None, description="Last update time")
    model_config = ConfigDict(from_attributes=True)


class CartDetailResponse(CartResponse):
    items: List[CartItemResponse] = Field(default_factory=list, description="Line items")
    subtotal: float = Field(0.0, description="Sum of quantity x unit price", examples=[201.98])


class CartListResponse(BaseModel):
    carts: List[CartResponse] = Field(..., description="Matching carts")


class CartCreateRequest(BaseModel):
    customer_id: int = Field(..., description="Customer who owns the cart", examples=[2])


class CartItemAddRequest(BaseModel):
    variant_id: int = Field(..., description="Variant to add", examples=[14])
    quantity: int = Field(1, gt=0, description="Units to add; merged with an existing line for the same variant", examples=[2])


class CartItemUpdateRequest(BaseModel):
    quantity: int = Field(..., gt=0, description="New quantity", examples=[3])


class ApplyCouponRequest(BaseModel):
    code: str = Field(..., description="Coupon code (case-insensitive)", examples=["WELCOME10"])


class CheckoutRequest(BaseModel):
    shipping_address_id: int = Field(..., description="Address ID of the customer to ship to", examples=[3])
    payment_method: str = Field(..., pattern="^(card|paypal|gift_card|bank_transfer)$", description="card, paypal, gift_card or bank_transfer", examples=["card"])
    notes: Optional[str] = Field(None, description="Order notes", examples=["Leave with concierge"])


class OrderItemResponse(BaseModel):
    id: int = Field(..., description="Order item ID", examples=[1])
    order_id: int = Field(..., description="Order ID", examples=[1])
    variant_id: Optional[int] = Field(None, description="Variant ID", examples=[8])
    product_name: str = Field(..., description="Product name at time of order", examples=["Merino Crew Sweater"])
    variant_name: str = Field(..., description="Variant label at time of order", examples=["Size M / Oatmeal"])
    sku: str = Field(..., description="SKU", examples=["MER-CRW-M-OAT"])
    quantity: int = Field(..., description="Units ordered", examples=[1])
    unit_price: float = Field(..., description="Unit price in USD", examples=[89.0])
    line_total: float = Field(..., description="quantity x unit_price", examples=[89.0])
    model_config = ConfigDict(from_attributes=True)


class OrderResponse(BaseModel):
    id: int = Field(..., description="Order ID", examples=[12])
    order_number: str = Field(..., description="Human-facing order number", examples=["SF-10012"])
    customer_id: int = Field(..., description="Customer ID", examples=[5])
    cart_id: Optional[int] = Field(None, description="Cart the order was created from")
    shipping_address_id: Optional[int] = Field(None, description="Shipping address ID", examples=[7])
    coupon_id: Optional[int] = Field(None, description="Coupon applied", examples=[1])
    status: str = Field(..., description="pending, paid, shipped, delivered, cancelled or refunded", examples=["paid"])
    subtotal: float = Field(..., description="Item subtotal in USD", examples=[208.0])
    discount_total: float = Field(..., description="Coupon discount in USD", examples=[0.0])
    shipping_total: float = Field(..., description="Shipping charge in USD", examples=[0.0])
    tax_total: float = Field(..., description="Sales tax in USD", examples=[16.64])
    total: float = Field(..., description="Grand total in USD", examples=[224.64])
    carrier: Optional[str] = Field(None, description="Shipping carrier", examples=["UPS"])
    tracking_number: Optional[str] = Field(None, description="Carrier tracking number")
    notes: Optional[str] = Field(None, description="Order notes")
    placed_at: Optional[datetime] = Field(None, description="When the order was placed")
    shipped_at: Optional[datetime] = Field(None, description="When the order shipped")
    updated_at: Optional[datetime] = Field(None, description="Last update time")
    model_config = ConfigDict(from_attributes=True)


class OrderDetailResponse(OrderResponse):
    items: List[OrderItemResponse] = Field(default_factory=list, description="Line items")


class OrderListResponse(BaseModel):
    orders: List[OrderResponse] = Field(..., description="Matching orders")


class OrderStatusUpdateRequest(BaseModel):
    status: str = Field(..., pattern="^(pending|paid|shipped|delivered|cancelled|refunded)$", description="New order status", examples=["shipped"])
    carrier: Optional[str] = Field(None, description="Carrier name, e.g. UPS, USPS, FedEx", examples=["UPS"])
    tracking_number: Optional[str] = Field(None, description="Carrier tracking number", examples=["1Z999AA10123456784"])
    notes: Optional[str] = Field(None, description="Replace the order notes")


class PaymentResponse(BaseModel):
    id: int = Field(..., description="Payment ID", examples=[7])
    order_id: int = Field(..., description="Order ID", examples=[7])
    method: str = Field(..., description="card, paypal, gift_card or bank_transfer", examples=["card"])
    amount: float = Field(..., description="Amount in USD", examples=[119.34])
    currency: str = Field(..., description="ISO currency", examples=["USD"])
    status: str = Field(..., description="authorized, captured, voided, failed, refunded or partially_refunded", examples=["captured"])
    transaction_ref: str = Field(..., description="Processor reference", examples=["ch_3Pv9JkG30007"])
    created_at: Optional[datetime] = Field(None, description="When the payment was taken")
    model_config = ConfigDict(from_attributes=True)


class PaymentListResponse(BaseModel):
    payments: List[PaymentResponse] = Field(..., description="Payments of the order")


class CheckoutResponse(BaseModel):
    order: OrderDetailResponse = Field(..., description="The created order")
    payment: PaymentResponse = Field(..., description="The captured payment")


class RefundCreateRequest(BaseModel):
    order_id: int = Field(..., description="Order being refunded", examples=[7])
    payment_id: int = Field(..., description="Payment to refund against", examples=[7])
    amount: float = Field(..., gt=0, description="Refund amount in USD", examples=[119.34])
    reason: str = Field(..., min_length=3, description="Reason shown to the customer", examples=["Arrived damaged"])


class RefundResponse(BaseModel):
    id: int = Field(..., description="Refund ID", examples=[4])
    order_id: int = Field(..., description="Order ID", examples=[7])
    payment_id: int = Field(..., description="Payment ID", examples=[7])
    amount: float = Field(..., description="Refunded amount in USD", examples=[119.34])
    reason: str = Field(..., description="Reason", examples=["Arrived damaged"])
    status: str = Field(..., description="pending, processed or rejected", examples=["processed"])
    processed_by_user_id: Optional[int] = Field(None, description="Staff user who processed it", examples=[1])
    created_at: Optional[datetime] = Field(None, description="When the refund was issued")
    model_config = ConfigDict(from_attributes=True)


class RefundListResponse(BaseModel):
    refunds: List[RefundResponse] = Field(..., description="Matching refunds")


class ReviewResponse(BaseModel):
    id: int = Field(..., description="Review ID", examples=[13])
    product_id: int = Field(..., description="Product ID", examples=[9])
    customer_id: int = Field(..., description="Author customer ID", examples=[4])
    rating: int = Field(..., description="Star rating 1-5", examples=[4])
    title: str = Field(..., description="Headline", examples=["Beautiful glaze"])
    body: Optional[str] = Field(None, description="Review text")
    status: str = Field(..., description="pending, approved or rejected", examples=["approved"])
    moderated_by_user_id: Optional[int] = Field(None, description="Staff user who moderated it")
    created_at: Optional[datetime] = Field(None, description="Submission time")
    model_config = ConfigDict(from_attributes=True)


class ReviewListResponse(BaseModel):
    reviews: List[ReviewResponse] = Field(..., description="Matching reviews")


class ReviewCreateRequest(BaseModel):
    product_id: int = Field(..., description="Product reviewed", examples=[9])
    customer_id: int = Field(..., description="Customer writing the review", examples=[3])
    rating: int = Field(..., ge=1, le=5, description="Star rating 1-5", examples=[5])
    title: str = Field(..., description="Headline", examples=["Great value"])
    body: Optional[str] = Field(None, description="Review text")


class ReviewModerateRequest(BaseModel):
    status: str = Field(..., pattern="^(pending|approved|rejected)$", description="approved, rejected or pending", examples=["approved"])


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def utcnow() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def slugify(value: str) -> str:
    out = []
    for ch in value.lower():
        if ch.isalnum():
            out.append(ch)
        elif out and out[-1] != "-":
            out.append("-")
    return "".join(out).strip("-")


def compute_totals(subtotal: float, coupon: Optional[Coupon]) -> dict:
    discount = 0.0
    if coupon is not None:
        if coupon.discount_type == "percent":
            discount = round(subtotal * coupon.discount_value / 100.0, 2)
        else:
            discount = round(min(coupon.discount_value, subtotal), 2)
    taxable = round(subtotal - discount, 2)
    shipping = 0.0 if taxable >= FREE_SHIPPING_THRESHOLD else FLAT_SHIPPING_RATE
    tax = round(taxable * TAX_RATE, 2)
    return {"subtotal": round(subtotal, 2), "discount_total": discount, "shipping_total": shipping,
            "tax_total": tax, "total": round(taxable + shipping + tax, 2)}


def order_detail(session, order: Order) -> OrderDetailResponse:
    items = session.query(OrderItem).filter(OrderItem.order_id == order.id).order_by(OrderItem.id).all()
    data = OrderResponse.model_validate(order).model_dump()
    return OrderDetailResponse(**data, items=[OrderItemResponse.model_validate(i) for i in items])


def cart_detail(session, cart: Cart) -> CartDetailResponse:
    items = session.query(CartItem).filter(CartItem.cart_id == cart.id).order_by(CartItem.id).all()
    data = CartResponse.model_validate(cart).model_dump()
    subtotal = round(sum(i.unit_price * i.quantity for i in items), 2)
    return CartDetailResponse(**data, items=[CartItemResponse.model_validate(i) for i in items], subtotal=subtotal)


# ---------------------------------------------------------------------------
# Users
# ---------------------------------------------------------------------------

@app.get(
    "/api/users",
    summary="List staff users",
    description="List back-office staff accounts, optionally filtered by a name/username search or role. User 1 is the signed-in user.",
    tags=["users"],
    operation_id="list_users",
    response_model=UserListResponse,
)
async def list_users(
    search: Optional[str] = Query(None, description="Case-insensitive match on full name, username or email"),
    role: Optional[str] = Query(None, description="Filter by role: owner, admin or staff"),
):
    session = SessionLocal()
    query = session.query(User)
    if search:
        like = f"%{search}%"
        query = query.filter(or_(User.full_name.ilike(like), User.username.ilike(like), User.email.ilike(like)))
    if role:
        query = query.filter(User.role == role)
    users = query.order_by(User.id).all()
    session.close()
    return UserListResponse(users=[UserResponse.model_validate(u) for u in users])


@app.get(
    "/api/users/me",
    summary="Get the signed-in staff user",
    description="Return the profile of the staff user the API acts as (user 1).",
    tags=["users"],
    operation_id="get_current_user",
    response_model=UserResponse,
)
async def get_current_user():
    session = SessionLocal()
    user = session.query(User).filter(User.id == CURRENT_USER_ID).first()
    session.close()
    return UserResponse.model_validate(user)


# ---------------------------------------------------------------------------
# Categories
# ---------------------------------------------------------------------------

@app.get(
    "/api/categories",
    summary="List categories",
    description="List catalogue categories. Filter by name (substring, case-insensitive) or by parent category to list subcategories.",
    tags=["categories"],
    operation_id="list_categories",
    response_model=CategoryListResponse,
)
async def list_categories(
    name: Optional[str] = Query(None, description="Substring of the category name"),
    parent_id: Optional[int] = Query(None, description="Only subcategories of this parent category ID"),
):
    session = SessionLocal()
    query = session.query(Category)
    if name:
        query = query.filter(Category.name.ilike(f"%{name}%"))
    if parent_id is not None:
        query = query.filter(Category.parent_id == parent_id)
    cats = query.order_by(Category.id).all()
    session.close()
    return CategoryListResponse(categories=[CategoryResponse.model_validate(c) for c in cats])


@app.post(
    "/api/categories",
    summary="Create a category",
    description="Create a top-level category or, with parent_id, a subcategory. Returns the created category with its ID.",
    tags=["categories"],
    operation_id="create_category",
    response_model=CategoryResponse,
)
async def create_category(body: CategoryCreateRequest = Body(...)):
    session = SessionLocal()
    cat = Category(
        name=body.name,
        slug=body.slug or slugify(body.name),
        parent_id=body.parent_id,
        description=body.description,
        is_active=1 if body.is_active else 0,
    )
    session.add(cat)
    session.commit()
    session.refresh(cat)
    session.close()
    return CategoryResponse.model_validate(cat)


@app.patch(
    "/api/categories/{category_id}",
    summary="Update a category",
    description="Rename, re-parent, describe or hide a category. Only the fields provided are changed.",
    tags=["categories"],
    operation_id="update_category",
    response_model=CategoryResponse,
)
async def update_category(
    category_id: int = Path(..., description="Category ID"),
    body: CategoryUpdateRequest = Body(...),
):
    session = SessionLocal()
    cat = session.query(Category).filter(Category.id == category_id).first()
    data = body.model_dump(exclude_unset=True)
    for key, value in data.items():
        if key == "is_active":
            value = 1 if value else 0
        setattr(cat, key, value)
    session.commit()
    session.refresh(cat)
    session.close()
    return CategoryResponse.model_validate(cat)


# ---------------------------------------------------------------------------
# Products
# ---------------------------------------------------------------------------

@app.get(
    "/api/products",
    summary="Search products",
    description="List catalogue products with optional filters: name search, category, brand, status and price range.",
    tags=["products"],
    operation_id="list_products",
    response_model=ProductListResponse,
)
async def list_products(
    search: Optional[str] = Query(None, description="Case-insensitive substring of the product name"),
    category_id: Optional[int] = Query(None, description="Only products in this category ID"),
    brand: Optional[str] = Query(None, description="Exact brand name"),
    status: Optional[str] = Query(None, description="draft, active or archived"),
    min_price: Optional[float] = Query(None, description="Minimum base price"),
    max_price: Optional[float] = Query(None, description="Maximum base price"),
):
    session = SessionLocal()
    query = session.query(Product)
    if search:
        query = query.filter(Product.name.ilike(f"%{search}%"))
    if category_id is not None:
        query = query.filter(Product.category_id == category_id)
    if brand:
        query = query.filter(Product.brand == brand)
    if status:
        query = query.filter(Product.status == status)
    if min_price is not None:
        query = query.filter(Product.base_price >= min_price)
    if max_price is not None:
        query = query.filter(Product.base_price <= max_price)
    products = query.order_by(Product.id).all()
    session.close()
    return ProductListResponse(products=[ProductResponse.model_validate(p) for p in products])


@app.get(
    "/api/products/{product_id}",
    summary="Get a product",
    description="Return one product with all of its variants, prices and stock levels.",
    tags=["products"],
    operation_id="get_product",
    response_model=ProductDetailResponse,
)
async def get_product(product_id: int = Path(..., description="Product ID")):
    session = SessionLocal()
    product = session.query(Product).filter(Product.id == product_id).first()
    variants = session.query(ProductVariant).filter(ProductVariant.product_id == product.id).order_by(ProductVariant.id).all()
    data = ProductResponse.model_validate(product).model_dump()
    session.close()
    return ProductDetailResponse(**data, variants=[VariantResponse.model_validate(v) for v in variants])


@app.post(
    "/api/products",
    summary="Create a product",
    description="Add a product to the catalogue. Variants are added separately with create_product_variant.",
    tags=["products"],
    operation_id="create_product",
    response_model=ProductResponse,
)
async def create_product(body: ProductCreateRequest = Body(...)):
    session = SessionLocal()
    product = Product(
        name=body.name,
        slug=body.slug or slugify(body.name),
        category_id=body.category_id,
        brand=body.brand,
        description=body.description,
        base_price=body.base_price,
        status=body.status,
    )
    session.add(product)
    session.commit()
    session.refresh(product)
    session.close()
    return ProductResponse.model_validate(product)


@app.patch(
    "/api/products/{product_id}",
    summary="Update a product",
    description="Change a product's name, category, brand, description, base price or status. Only provided fields change.",
    tags=["products"],
    operation_id="update_product",
    response_model=ProductResponse,
)
async def update_product(
    product_id: int = Path(..., description="Product ID"),
    body: ProductUpdateRequest = Body(...),
):
    session = SessionLocal()
    product = session.query(Product).filter(Product.id == product_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        setattr(product, key, value)
    product.updated_at = utcnow()
    session.commit()
    session.refresh(product)
    session.close()
    return ProductResponse.model_validate(product)


@app.delete(
    "/api/products/{product_id}",
    summary="Delete a product",
    description="Permanently delete a product together with its variants and reviews. Prefer archiving products that have orders.",
    tags=["products"],
    operation_id="delete_product",
    response_model=DeleteResponse,
)
async def delete_product(product_id: int = Path(..., description="Product ID")):
    session = SessionLocal()
    product = session.query(Product).filter(Product.id == product_id).first()
    pid = product.id
    session.query(ProductVariant).filter(ProductVariant.product_id == pid).delete()
    session.query(ProductReview).filter(ProductReview.product_id == pid).delete()
    session.delete(product)
    session.commit()
    session.close()
    return DeleteResponse(id=pid, deleted=True)


# ---------------------------------------------------------------------------
# Variants & inventory
# ---------------------------------------------------------------------------

@app.get(
    "/api/variants",
    summary="List product variants",
    description="List variants (SKUs) with price and stock. Filter by product, SKU substring, or only those in stock.",
    tags=["variants"],
    operation_id="list_product_variants",
    response_model=VariantListResponse,
)
async def list_product_variants(
    product_id: Optional[int] = Query(None, description="Only variants of this product ID"),
    sku: Optional[str] = Query(None, description="Case-insensitive substring of the SKU"),
    in_stock: Optional[bool] = Query(None, description="true: stock > 0 only; false: out of stock only"),
):
    session = SessionLocal()
    query = session.query(ProductVariant)
    if product_id is not None:
        query = query.filter(ProductVariant.product_id == product_id)
    if sku:
        query = query.filter(ProductVariant.sku.ilike(f"%{sku}%"))
    if in_stock is True:
        query = query.filter(ProductVariant.stock_quantity > 0)
    elif in_stock is False:
        query = query.filter(ProductVariant.stock_quantity == 0)
    variants = query.order_by(ProductVariant.id).all()
    session.close()
    return VariantListResponse(variants=[VariantResponse.model_validate(v) for v in variants])


@app.post(
    "/api/variants",
    summary="Create a product variant",
    description="Add a sellable variant (size/colour, SKU, price, opening stock) to a product.",
    tags=["variants"],
    operation_id="create_product_variant",
    response_model=VariantResponse,
)
async def create_product_variant(body: VariantCreateRequest = Body(...)):
    session = SessionLocal()
    variant = ProductVariant(
        product_id=body.product_id,
        sku=body.sku,
        name=body.name,
        price=body.price,
        stock_quantity=body.stock_quantity,
        weight_grams=body.weight_grams,
        is_active=1 if body.is_active else 0,
    )
    session.add(variant)
    session.commit()
    session.refresh(variant)
    session.close()
    return VariantResponse.model_validate(variant)


@app.patch(
    "/api/variants/{variant_id}",
    summary="Update a product variant",
    description="Change a variant's label, price, absolute stock quantity, weight or active flag.",
    tags=["variants"],
    operation_id="update_product_variant",
    response_model=VariantResponse,
)
async def update_product_variant(
    variant_id: int = Path(..., description="Variant ID"),
    body: VariantUpdateRequest = Body(...),
):
    session = SessionLocal()
    variant = session.query(ProductVariant).filter(ProductVariant.id == variant_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key == "is_active":
            value = 1 if value else 0
        setattr(variant, key, value)
    variant.updated_at = utcnow()
    session.commit()
    session.refresh(variant)
    session.close()
    return VariantResponse.model_validate(variant)


@app.delete(
    "/api/variants/{variant_id}",
    summary="Delete a product variant",
    description="Permanently remove a variant (SKU) from a product.",
    tags=["variants"],
    operation_id="delete_product_variant",
    response_model=DeleteResponse,
)
async def delete_product_variant(variant_id: int = Path(..., description="Variant ID")):
    session = SessionLocal()
    variant = session.query(ProductVariant).filter(ProductVariant.id == variant_id).first()
    vid = variant.id
    session.delete(variant)
    session.commit()
    session.close()
    return DeleteResponse(id=vid, deleted=True)


@app.post(
    "/api/variants/{variant_id}/inventory-adjustments",
    summary="Adjust variant inventory",
    description="Add or remove stock for a variant by a relative delta (e.g. +25 for a restock) and record the movement in the inventory log.",
    tags=["variants"],
    operation_id="adjust_variant_inventory",
    response_model=InventoryAdjustmentResponse,
)
async def adjust_variant_inventory(
    variant_id: int = Path(..., description="Variant ID"),
    body: InventoryAdjustmentRequest = Body(...),
):
    session = SessionLocal()
    variant = session.query(ProductVariant).filter(ProductVariant.id == variant_id).first()
    variant.stock_quantity = variant.stock_quantity + body.delta
    variant.updated_at = utcnow()
    adj = InventoryAdjustment(
        variant_id=variant.id,
        delta=body.delta,
        reason=body.reason,
        note=body.note,
        created_by_user_id=CURRENT_USER_ID,
    )
    session.add(adj)
    session.commit()
    session.refresh(adj)
    session.refresh(variant)
    data = {c: getattr(adj, c) for c in ("id", "variant_id", "delta", "reason", "note", "created_by_user_id", "created_at")}
    session.close()
    return InventoryAdjustmentResponse(**data, new_stock_quantity=variant.stock_quantity)


# ---------------------------------------------------------------------------
# Customers & addresses
# ---------------------------------------------------------------------------

@app.get(
    "/api/customers",
    summary="Search customers",
    description="Find customers by name or email (case-insensitive substring) and/or loyalty tier.",
    tags=["customers"],
    operation_id="list_customers",
    response_model=CustomerListResponse,
)
async def list_customers(
    search: Optional[str] = Query(None, description="Substring of first name, last name, full name or email"),
    loyalty_tier: Optional[str] = Query(None, description="bronze, silver, gold or platinum"),
):
    session = SessionLocal()
    query = session.query(Customer)
    if search:
        like = f"%{search}%"
        query = query.filter(or_(
            Customer.first_name.ilike(like),
            Customer.last_name.ilike(like),
            (Customer.first_name + " " + Customer.last_name).ilike(like),
            Customer.email.ilike(like),
        ))
    if loyalty_tier:
        query = query.filter(Customer.loyalty_tier == loyalty_tier)
    customers = query.order_by(Customer.id).all()
    session.close()
    return CustomerListResponse(customers=[CustomerResponse.model_validate(c) for c in customers])


@app.get(
    "/api/customers/{customer_id}",
    summary="Get a customer",
    description="Return one customer's profile.",
    tags=["customers"],
    operation_id="get_customer",
    response_model=CustomerResponse,
)
async def get_customer(customer_id: int = Path(..., description="Customer ID")):
    session = SessionLocal()
    customer = session.query(Customer).filter(Customer.id == customer_id).first()
    session.close()
    return CustomerResponse.model_validate(customer)


@app.post(
    "/api/customers",
    summary="Create a customer",
    description="Register a new customer account. Returns the customer with its ID.",
    tags=["customers"],
    operation_id="create_customer",
    response_model=CustomerResponse,
)
async def create_customer(body: CustomerCreateRequest = Body(...)):
    session = SessionLocal()
    customer = Customer(
        first_name=body.first_name,
        last_name=body.last_name,
        email=str(body.email).lower(),
        phone=body.phone,
        loyalty_tier=body.loyalty_tier,
        marketing_opt_in=1 if body.marketing_opt_in else 0,
    )
    session.add(customer)
    session.commit()
    session.refresh(customer)
    session.close()
    return CustomerResponse.model_validate(customer)


@app.patch(
    "/api/customers/{customer_id}",
    summary="Update a customer",
    description="Update a customer's name, email, phone, loyalty tier or marketing preference.",
    tags=["customers"],
    operation_id="update_customer",
    response_model=CustomerResponse,
)
async def update_customer(
    customer_id: int = Path(..., description="Customer ID"),
    body: CustomerUpdateRequest = Body(...),
):
    session = SessionLocal()
    customer = session.query(Customer).filter(Customer.id == customer_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key == "marketing_opt_in":
            value = 1 if value else 0
        if key == "email" and value is not None:
            value = str(value).lower()
        setattr(customer, key, value)
    session.commit()
    session.refresh(customer)
    session.close()
    return CustomerResponse.model_validate(customer)


@app.get(
    "/api/customers/{customer_id}/addresses",
    summary="List a customer's addresses",
    description="Return the saved shipping addresses of a customer; is_default marks the default shipping address.",
    tags=["addresses"],
    operation_id="list_customer_addresses",
    response_model=AddressListResponse,
)
async def list_customer_addresses(customer_id: int = Path(..., description="Customer ID")):
    session = SessionLocal()
    addresses = session.query(Address).filter(Address.customer_id == customer_id).order_by(Address.id).all()
    session.close()
    return AddressListResponse(addresses=[AddressResponse.model_validate(a) for a in addresses])


@app.post(
    "/api/customers/{customer_id}/addresses",
    summary="Add an address to a customer",
    description="Save a new shipping address for a customer. With is_default=true the previous default is cleared.",
    tags=["addresses"],
    operation_id="create_customer_address",
    response_model=AddressResponse,
)
async def create_customer_address(
    customer_id: int = Path(..., description="Customer ID"),
    body: AddressCreateRequest = Body(...),
):
    session = SessionLocal()
    if body.is_default:
        for other in session.query(Address).filter(Address.customer_id == customer_id).all():
            other.is_default = 0
    address = Address(
        customer_id=customer_id,
        label=body.label,
        recipient_name=body.recipient_name,
        line1=body.line1,
        line2=body.line2,
        city=body.city,
        region=body.region,
        postal_code=body.postal_code,
        country_code=body.country_code.upper(),
        is_default=1 if body.is_default else 0,
    )
    session.add(address)
    session.commit()
    session.refresh(address)
    session.close()
    return AddressResponse.model_validate(address)


@app.delete(
    "/api/addresses/{address_id}",
    summary="Delete an address",
    description="Remove a saved address. Past orders keep their shipping_address_id reference.",
    tags=["addresses"],
    operation_id="delete_address",
    response_model=DeleteResponse,
)
async def delete_address(address_id: int = Path(..., description="Address ID")):
    session = SessionLocal()
    address = session.query(Address).filter(Address.id == address_id).first()
    aid = address.id
    session.delete(address)
    session.commit()
    session.close()
    return DeleteResponse(id=aid, deleted=True)


# ---------------------------------------------------------------------------
# Coupons
# ---------------------------------------------------------------------------

@app.get(
    "/api/coupons",
    summary="List coupons",
    description="List discount coupons, optionally filtered by code (substring, case-insensitive) or active flag.",
    tags=["coupons"],
    operation_id="list_coupons",
    response_model=CouponListResponse,
)
async def list_coupons(
    code: Optional[str] = Query(None, description="Substring of the coupon code"),
    is_active: Optional[bool] = Query(None, description="Filter by active flag"),
):
    session = SessionLocal()
    query = session.query(Coupon)
    if code:
        query = query.filter(Coupon.code.ilike(f"%{code}%"))
    if is_active is not None:
        query = query.filter(Coupon.is_active == (1 if is_active else 0))
    coupons = query.order_by(Coupon.id).all()
    session.close()
    return CouponListResponse(coupons=[CouponResponse.model_validate(c) for c in coupons])


@app.post(
    "/api/coupons",
    summary="Create a coupon",
    description="Create a percent or fixed-amount discount code. The code is stored upper-case. Returns the coupon with its ID.",
    tags=["coupons"],
    operation_id="create_coupon",
    response_model=CouponResponse,
)
async def create_coupon(body: CouponCreateRequest = Body(...)):
    session = SessionLocal()
    coupon = Coupon(
        code=body.code.strip().upper(),
        description=body.description,
        discount_type=body.discount_type,
        discount_value=body.discount_value,
        min_order_total=body.min_order_total,
        max_redemptions=body.max_redemptions,
        times_redeemed=0,
        is_active=1 if body.is_active else 0,
        expires_at=body.expires_at,
        created_by_user_id=CURRENT_USER_ID,
    )
    session.add(coupon)
    session.commit()
    session.refresh(coupon)
    session.close()
    return CouponResponse.model_validate(coupon)


@app.patch(
    "/api/coupons/{coupon_id}",
    summary="Update a coupon",
    description="Change a coupon's value, minimum order, redemption cap, expiry or active flag.",
    tags=["coupons"],
    operation_id="update_coupon",
    response_model=CouponResponse,
)
async def update_coupon(
    coupon_id: int = Path(..., description="Coupon ID"),
    body: CouponUpdateRequest = Body(...),
):
    session = SessionLocal()
    coupon = session.query(Coupon).filter(Coupon.id == coupon_id).first()
    for key, value in body.model_dump(exclude_unset=True).items():
        if key == "is_active":
            value = 1 if value else 0
        setattr(coupon, key, value)
    session.commit()
    session.refresh(coupon)
    session.close()
    return CouponResponse.model_validate(coupon)


@app.delete(
    "/api/coupons/{coupon_id}",
    summary="Delete a coupon",
    description="Permanently delete a coupon code.",
    tags=["coupons"],
    operation_id="delete_coupon",
    response_model=DeleteResponse,
)
async def delete_coupon(coupon_id: int = Path(..., description="Coupon ID")):
    session = SessionLocal()
    coupon = session.query(Coupon).filter(Coupon.id == coupon_id).first()
    cid = coupon.id
    session.delete(coupon)
    session.commit()
    session.close()
    return DeleteResponse(id=cid, deleted=True)


# ---------------------------------------------------------------------------
# Carts
# ---------------------------------------------------------------------------

@app.get(
    "/api/carts",
    summary="List carts",
    description="List shopping carts, filtered by customer and/or status (active, converted, abandoned).",
    tags=["carts"],
    operation_id="list_carts",
    response_model=CartListResponse,
)
async def list_carts(
    customer_id: Optional[int] = Query(None, description="Only carts of this customer ID"),
    status: Optional[str] = Query(None, description="active, converted or abandoned"),
):
    session = SessionLocal()
    query = session.query(Cart)
    if customer_id is not None:
        query = query.filter(Cart.customer_id == customer_id)
    if status:
        query = query.filter(Cart.status == status)
    carts = query.order_by(Cart.id).all()
    session.close()
    return CartListResponse(carts=[CartResponse.model_validate(c) for c in carts])


@app.get(
    "/api/carts/{cart_id}",
    summary="Get a cart",
    description="Return a cart with its line items and running subtotal.",
    tags=["carts"],
    operation_id="get_cart",
    response_model=CartDetailResponse,
)
async def get_cart(cart_id: int = Path(..., description="Cart ID")):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id).first()
    result = cart_detail(session, cart)
    session.close()
    return result


@app.post(
    "/api/carts",
    summary="Create a cart",
    description="Open a new empty active cart for a customer. Returns the cart with its ID.",
    tags=["carts"],
    operation_id="create_cart",
    response_model=CartDetailResponse,
)
async def create_cart(body: CartCreateRequest = Body(...)):
    session = SessionLocal()
    cart = Cart(customer_id=body.customer_id, status="active")
    session.add(cart)
    session.commit()
    session.refresh(cart)
    result = cart_detail(session, cart)
    session.close()
    return result


@app.post(
    "/api/carts/{cart_id}/items",
    summary="Add an item to a cart",
    description="Add units of a variant to a cart at the variant's current price. Adding a variant already in the cart increases its quantity.",
    tags=["carts"],
    operation_id="add_cart_item",
    response_model=CartDetailResponse,
)
async def add_cart_item(
    cart_id: int = Path(..., description="Cart ID"),
    body: CartItemAddRequest = Body(...),
):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id).first()
    variant = session.query(ProductVariant).filter(ProductVariant.id == body.variant_id).first()
    item = session.query(CartItem).filter(CartItem.cart_id == cart.id, CartItem.variant_id == variant.id).first()
    if item is None:
        item = CartItem(cart_id=cart.id, variant_id=variant.id, quantity=body.quantity, unit_price=variant.price)
        session.add(item)
    else:
        item.quantity = item.quantity + body.quantity
    cart.updated_at = utcnow()
    session.commit()
    result = cart_detail(session, cart)
    session.close()
    return result


@app.patch(
    "/api/carts/{cart_id}/items/{item_id}",
    summary="Change a cart item's quantity",
    description="Set the quantity of an existing cart line item.",
    tags=["carts"],
    operation_id="update_cart_item",
    response_model=CartDetailResponse,
)
async def update_cart_item(
    cart_id: int = Path(..., description="Cart ID"),
    item_id: int = Path(..., description="Cart item ID"),
    body: CartItemUpdateRequest = Body(...),
):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id).first()
    item = session.query(CartItem).filter(CartItem.id == item_id, CartItem.cart_id == cart.id).first()
    item.quantity = body.quantity
    cart.updated_at = utcnow()
    session.commit()
    result = cart_detail(session, cart)
    session.close()
    return result


@app.delete(
    "/api/carts/{cart_id}/items/{item_id}",
    summary="Remove an item from a cart",
    description="Delete a line item from a cart and return the updated cart.",
    tags=["carts"],
    operation_id="remove_cart_item",
    response_model=CartDetailResponse,
)
async def remove_cart_item(
    cart_id: int = Path(..., description="Cart ID"),
    item_id: int = Path(..., description="Cart item ID"),
):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id).first()
    item = session.query(CartItem).filter(CartItem.id == item_id, CartItem.cart_id == cart.id).first()
    session.delete(item)
    cart.updated_at = utcnow()
    session.commit()
    result = cart_detail(session, cart)
    session.close()
    return result


@app.post(
    "/api/carts/{cart_id}/coupon",
    summary="Apply a coupon to a cart",
    description="Attach a coupon to a cart by its code (case-insensitive). The discount is applied at checkout.",
    tags=["carts"],
    operation_id="apply_coupon_to_cart",
    response_model=CartDetailResponse,
)
async def apply_coupon_to_cart(
    cart_id: int = Path(..., description="Cart ID"),
    body: ApplyCouponRequest = Body(...),
):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id).first()
    coupon = session.query(Coupon).filter(func.upper(Coupon.code) == body.code.strip().upper()).first()
    cart.coupon_id = coupon.id
    cart.updated_at = utcnow()
    session.commit()
    result = cart_detail(session, cart)
    session.close()
    return result


@app.post(
    "/api/carts/{cart_id}/checkout",
    summary="Check out a cart",
    description=(
        "Convert an active cart into a paid order: copies the line items, applies the cart's coupon, adds shipping "
        "($6.95, free from $75 after discount) and 8% sales tax, captures the payment, decrements stock and marks "
        "the cart converted. Returns the order and payment."
    ),
    tags=["carts"],
    operation_id="checkout_cart",
    response_model=CheckoutResponse,
)
async def checkout_cart(
    cart_id: int = Path(..., description="Cart ID"),
    body: CheckoutRequest = Body(...),
):
    session = SessionLocal()
    cart = session.query(Cart).filter(Cart.id == cart_id, Cart.status == "active").first()
    address = session.query(Address).filter(Address.id == body.shipping_address_id, Address.customer_id == cart.customer_id).first()
    items = session.query(CartItem).filter(CartItem.cart_id == cart.id).order_by(CartItem.id).all()
    coupon = None
    if cart.coupon_id is not None:
        coupon = session.query(Coupon).filter(Coupon.id == cart.coupon_id).first()
    subtotal = sum(i.unit_price * i.quantity for i in items)
    totals = compute_totals(subtotal, coupon)
    next_id = (session.query(func.max(Order.id)).scalar() or 0) + 1
    order = Order(
        order_number=f"SF-{10000 + next_id}",
        customer_id=cart.customer_id,
        cart_id=cart.id,
        shipping_address_id=address.id,
        coupon_id=coupon.id if coupon is not None else None,
        status="paid",
        notes=body.notes,
        **totals,
    )
    session.add(order)
    session.flush()
    for item in items:
        variant = session.query(ProductVariant).filter(ProductVariant.id == item.variant_id).first()
        product = session.query(Product).filter(Product.id == variant.product_id).first()
        session.add(OrderItem(
            order_id=order.id,
            variant_id=variant.id,
            product_name=product.name,
            variant_name=variant.name,
            sku=variant.sku,
            quantity=item.quantity,
            unit_price=item.unit_price,
            line_total=round(item.unit_price * item.quantity, 2),
        ))
        variant.stock_quantity = variant.stock_quantity - item.quantity
        variant.updated_at = utcnow()
    if coupon is not None:
        coupon.times_redeemed = coupon.times_redeemed + 1
    payment = Payment(
        order_id=order.id,
        method=body.payment_method,
        amount=totals["total"],
        currency="USD",
        status="captured",
        transaction_ref=f"ch_sf{order.id:06d}{int(datetime.now(timezone.utc).timestamp())}",
    )
    session.add(payment)
    cart.status = "converted"
    cart.updated_at = utcnow()
    session.commit()
    session.refresh(order)
    session.refresh(payment)
    result = CheckoutResponse(order=order_detail(session, order), payment=PaymentResponse.model_validate(payment))
    session.close()
    return result


# ---------------------------------------------------------------------------
# Orders
# ---------------------------------------------------------------------------

@app.get(
    "/api/orders",
    summary="List orders",
    description="List orders, newest first, filtered by order number, customer, status or coupon.",
    tags=["orders"],
    operation_id="list_orders",
    response_model=OrderListResponse,
)
async def list_orders(
    order_number: Optional[str] = Query(None, description="Exact order number, e.g. SF-10012"),
    customer_id: Optional[int] = Query(None, description="Only orders of this customer ID"),
    status: Optional[str] = Query(None, description="pending, paid, shipped, delivered, cancelled or refunded"),
    coupon_id: Optional[int] = Query(None, description="Only orders that used this coupon ID"),
):
    session = SessionLocal()
    query = session.query(Order)
    if order_number:
        query = query.filter(func.upper(Order.order_number) == order_number.strip().upper())
    if customer_id is not None:
        query = query.filter(Order.customer_id == customer_id)
    if status:
        query = query.filter(Order.status == status)
    if coupon_id is not None:
        query = query.filter(Order.coupon_id == coupon_id)
    orders = query.order_by(Order.placed_at.desc(), Order.id.desc()).all()
    session.close()
    return OrderListResponse(orders=[OrderResponse.model_validate(o) for o in orders])


@app.get(
    "/api/orders/{order_id}",
    summary="Get an order",
    description="Return an order with its line items (variant, SKU, quantity, price).",
    tags=["orders"],
    operation_id="get_order",
    response_model=OrderDetailResponse,
)
async def get_order(order_id: int = Path(..., description="Order ID")):
    session = SessionLocal()
    order = session.query(Order).filter(Order.id == order_id).first()
    result = order_detail(session, order)
    session.close()
    return result


@app.patch(
    "/api/orders/{order_id}/status",
    summary="Update an order's status",
    description="Move an order through fulfilment (e.g. paid -> shipped -> delivered) and record carrier and tracking number. Shipping sets shipped_at.",
    tags=["orders"],
    operation_id="update_order_status",
    response_model=OrderResponse,
)
async def update_order_status(
    order_id: int = Path(..., description="Order ID"),
    body: OrderStatusUpdateRequest = Body(...),
):
    session = SessionLocal()
    order = session.query(Order).filter(Order.id == order_id).first()
    order.status = body.status
    if body.carrier is not None:
        order.carrier = body.carrier
    if body.tracking_number is not None:
        order.tracking_number = body.tracking_number
    if body.notes is not None:
        order.notes = body.notes
    if body.status == "shipped" and order.shipped_at is None:
        order.shipped_at = utcnow()
    order.updated_at = utcnow()
    session.commit()
    session.refresh(order)
    session.close()
    return OrderResponse.model_validate(order)


# ---------------------------------------------------------------------------
# Payments & refunds
# ---------------------------------------------------------------------------

@app.get(
    "/api/orders/{order_id}/payments",
    summary="List an order's payments",
    description="Return the payments taken for an order, with method, amount and status.",
    tags=["payments"],
    operation_id="list_order_payments",
    response_model=PaymentListResponse,
)
async def list_order_payments(order_id: int = Path(..., description="Order ID")):
    session = SessionLocal()
    payments = session.query(Payment).filter(Payment.order_id == order_id).order_by(Payment.id).all()
    session.close()
    return PaymentListResponse(payments=[PaymentResponse.model_validate(p) for p in payments])


@app.get(
    "/api/refunds",
    summary="List refunds",
    description="List refunds, optionally for one order or with a given status.",
    tags=["payments"],
    operation_id="list_refunds",
    response_model=RefundListResponse,
)
async def list_refunds(
    order_id: Optional[int] = Query(None, description="Only refunds of this order ID"),
    status: Optional[str] = Query(None, description="pending, processed or rejected"),
):
    session = SessionLocal()
    query = session.query(Refund)
    if order_id is not None:
        query = query.filter(Refund.order_id == order_id)
    if status:
        query = query.filter(Refund.status == status)
    refunds = query.order_by(Refund.id).all()
    session.close()
    return RefundListResponse(refunds=[RefundResponse.model_validate(r) for r in refunds])


@app.post(
    "/api/refunds",
    summary="Refund a payment",
    description=(
        "Issue a processed refund against a payment of an order. The payment becomes refunded when the refunds "
        "cover its full amount, otherwise partially_refunded. The order status is not changed; use update_order_status."
    ),
    tags=["payments"],
    operation_id="create_refund",
    response_model=RefundResponse,
)
async def create_refund(body: RefundCreateRequest = Body(...)):
    session = SessionLocal()
    payment = session.query(Payment).filter(Payment.id == body.payment_id, Payment.order_id == body.order_id).first()
    refund = Refund(
        order_id=payment.order_id,
        payment_id=payment.id,
        amount=round(body.amount, 2),
        reason=body.reason,
        status="processed",
        processed_by_user_id=CURRENT_USER_ID,
    )
    session.add(refund)
    session.flush()
    refunded = session.query(func.sum(Refund.amount)).filter(Refund.payment_id == payment.id, Refund.status == "processed").scalar() or 0
    payment.status = "refunded" if round(refunded, 2) >= round(payment.amount, 2) else "partially_refunded"
    session.commit()
    session.refresh(refund)
    session.close()
    return RefundResponse.model_validate(refund)


# ---------------------------------------------------------------------------
# Reviews
# ---------------------------------------------------------------------------

@app.get(
    "/api/reviews",
    summary="List product reviews",
    description="List customer reviews filtered by product, customer, moderation status or minimum rating.",
    tags=["reviews"],
    operation_id="list_product_reviews",
    response_model=ReviewListResponse,
)
async def list_product_reviews(
    product_id: Optional[int] = Query(None, description="Only reviews of this product ID"),
    customer_id: Optional[int] = Query(None, description="Only reviews written by this customer ID"),
    status: Optional[str] = Query(None, description="pending, approved or rejected"),
    min_rating: Optional[int] = Query(None, ge=1, le=5, description="Minimum star rating"),
):
    session = SessionLocal()
    query = session.query(ProductReview)
    if product_id is not None:
        query = query.filter(ProductReview.product_id == product_id)
    if customer_id is not None:
        query = query.filter(ProductReview.customer_id == customer_id)
    if status:
        query = query.filter(ProductReview.status == status)
    if min_rating is not None:
        query = query.filter(ProductReview.rating >= min_rating)
    reviews = query.order_by(ProductReview.id).all()
    session.close()
    return ReviewListResponse(reviews=[ReviewResponse.model_validate(r) for r in reviews])


@app.post(
    "/api/reviews",
    summary="Submit a product review",
    description="Record a customer's review of a product; new reviews start as pending moderation. One review per customer per product.",
    tags=["reviews"],
    operation_id="create_product_review",
    response_model=ReviewResponse,
)
async def create_product_review(body: ReviewCreateRequest = Body(...)):
    session = SessionLocal()
    review = ProductReview(
        product_id=body.product_id,
        customer_id=body.customer_id,
        rating=body.rating,
        title=body.title,
        body=body.body,
        status="pending",
    )
    session.add(review)
    session.commit()
    session.refresh(review)
    session.close()
    return ReviewResponse.model_validate(review)


@app.patch(
    "/api/reviews/{review_id}/moderation",
    summary="Moderate a review",
    description="Approve or reject a review (or send it back to pending). Records the signed-in user as moderator.",
    tags=["reviews"],
    operation_id="moderate_product_review",
    response_model=ReviewResponse,
)
async def moderate_product_review(
    review_id: int = Path(..., description="Review ID"),
    body: ReviewModerateRequest = Body(...),
):
    session = SessionLocal()
    review = session.query(ProductReview).filter(ProductReview.id == review_id).first()
    review.status = body.status
    review.moderated_by_user_id = CURRENT_USER_ID
    session.commit()
    session.refresh(review)
    session.close()
    return ReviewResponse.model_validate(review)


@app.delete(
    "/api/reviews/{review_id}",
    summary="Delete a review",
    description="Permanently delete a product review (e.g. spam).",
    tags=["reviews"],
    operation_id="delete_product_review",
    response_model=DeleteResponse,
)
async def delete_product_review(review_id: int = Path(..., description="Review ID")):
    session = SessionLocal()
    review = session.query(ProductReview).filter(ProductReview.id == review_id).first()
    rid = review.id
    session.delete(review)
    session.commit()
    session.close()
    return DeleteResponse(id=rid, deleted=True)


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host=os.getenv("HOST", "127.0.0.1"), port=int(os.getenv("PORT", "8000")))
