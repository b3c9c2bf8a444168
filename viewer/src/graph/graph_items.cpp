#include "graph/graph_items.h"

#include <QFont>
#include <QPainter>
#include <QPainterPathStroker>
#include <QStyleOptionGraphicsItem>
#include <cmath>

namespace onnxscope::viewer::graph {

namespace {

// Below these zoom levels text is unreadable anyway: skip drawing it.
constexpr double kTextLod = 0.45;
constexpr double kEdgeLabelLod = 0.7;

QFont title_font() {
  QFont f;
  f.setPointSizeF(10);
  f.setBold(true);
  return f;
}
QFont small_font(double pt) {
  QFont f;
  f.setPointSizeF(pt);
  return f;
}

bool dark(const QColor& c) { return c.lightnessF() < 0.62; }

}  // namespace

QColor heat_color(double t) {
  t = std::clamp(std::isfinite(t) ? t : 1.0, 0.0, 1.0);
  const QColor a(0x3b, 0x6f, 0xd0), b(0xf2, 0xd0, 0x3c), c(0xd7, 0x30, 0x27);
  auto mix = [](const QColor& x, const QColor& y, double s) {
    return QColor::fromRgbF(x.redF() + (y.redF() - x.redF()) * s, x.greenF() + (y.greenF() - x.greenF()) * s,
                            x.blueF() + (y.blueF() - x.blueF()) * s);
  };
  return t < 0.5 ? mix(a, b, t * 2) : mix(b, c, (t - 0.5) * 2);
}

BoxItem::BoxItem(int box, const Box& b) : box_(box), b_(b) {
  rect_ = QRectF(-b.width / 2, -b.height / 2, b.width, b.height);
  setFlag(ItemIsSelectable);
  setAcceptHoverEvents(false);
  setZValue(2);
  QString tip = b.title;
  if (!b.subtitle.isEmpty()) tip += "\n" + b.subtitle;
  if (b.kind == Box::Kind::Group) tip += "\n" + b.scope + "\ndouble-click to expand";
  if (b.has_body) tip += "\ndouble-click to open its body";
  setToolTip(tip);
}

QRectF BoxItem::boundingRect() const { return rect_.adjusted(-6, -6, 8, 8); }

QPainterPath BoxItem::shape() const {
  QPainterPath p;
  p.addRect(rect_);
  return p;
}

QColor BoxItem::fill_color() const {
  if (heat_) return *heat_;
  QColor c = category_color(b_.category);
  if (dimmed_) c = QColor::fromHslF(c.hslHueF(), 0.05, 0.85);
  return c;
}

void BoxItem::set_heat(std::optional<QColor> c) {
  heat_ = c;
  update();
}
void BoxItem::set_dimmed(bool on) {
  dimmed_ = on;
  update();
}
void BoxItem::set_current(bool on) {
  current_ = on;
  update();
}
void BoxItem::set_breakpoint(bool on) {
  breakpoint_ = on;
  update();
}

void BoxItem::paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget*) {
  const double lod = o->levelOfDetailFromTransform(p->worldTransform());
  const QColor fill = fill_color();
  const bool io = b_.kind == Box::Kind::Input || b_.kind == Box::Kind::Output;
  QPen border(io ? QColor(0x70, 0x70, 0x70) : fill.darker(140), 1);
  if (isSelected()) border = QPen(QColor(0x10, 0x60, 0xff), 3);
  if (current_) border = QPen(QColor(0xff, 0x8c, 0x00), 4);
  if (b_.kind == Box::Kind::Group) {  // a stack of cards: "many nodes inside"
    p->setPen(QPen(fill.darker(160), 1));
    p->setBrush(fill.lighter(115));
    p->drawRoundedRect(rect_.translated(4, 4), 4, 4);
  }
  p->setPen(border);
  p->setBrush(fill);
  const double radius = io ? rect_.height() / 2 : 4;
  if (lod < 0.15) p->drawRect(rect_);
  else p->drawRoundedRect(rect_, radius, radius);
  if (breakpoint_) {
    p->setPen(QPen(Qt::white, 1.5));
    p->setBrush(QColor(0xd0, 0x10, 0x10));
    p->drawEllipse(QPointF(rect_.left(), rect_.top()), 6, 6);
  }
  if (lod < kTextLod) return;
  const QColor text = dark(fill) ? Qt::white : QColor(0x20, 0x20, 0x20);
  p->setPen(text);
  const QFont tf = title_font();
  if (b_.subtitle.isEmpty()) {
    p->setFont(tf);
    p->drawText(rect_, Qt::AlignCenter, b_.title);
  } else {
    const double h = rect_.height() - 10;
    QRectF top(rect_.left(), rect_.top() + 5, rect_.width(), h * 0.55);
    QRectF bottom(rect_.left(), top.bottom(), rect_.width(), h * 0.45);
    p->setFont(tf);
    p->drawText(top, Qt::AlignCenter, b_.title);
    p->setFont(small_font(8));
    p->drawText(bottom, Qt::AlignCenter, b_.subtitle);
  }
  if (b_.has_body) {  // a corner mark: this node opens a nested view
    p->setPen(QPen(text, 1.2));
    const QPointF c = rect_.bottomRight() - QPointF(7, 7);
    p->drawRect(QRectF(c - QPointF(3, 3), QSizeF(6, 6)));
  }
}

EdgeItem::EdgeItem(int edge, const Edge& e, const EdgeGeometry& geo)
    : edge_(edge), tensor_(e.tensor), label_(e.label), path_(geo.path) {
  setFlag(ItemIsSelectable);
  setZValue(1);
  if (geo.has_arrow) {
    const QPointF d = geo.arrow_tip - geo.arrow_base;
    const double len = std::hypot(d.x(), d.y());
    if (len > 0) {
      const QPointF u = d / len, n(-u.y(), u.x());
      arrow_ << geo.arrow_tip << geo.arrow_base + n * 3.5 << geo.arrow_base - n * 3.5;
      path_.lineTo(geo.arrow_base);
    }
  }
  QPainterPathStroker stroker;
  stroker.setWidth(7);
  hit_ = stroker.createStroke(path_);
  bounds_ = path_.boundingRect().united(arrow_.boundingRect()).adjusted(-3, -3, 3, 3);
  if (geo.has_label && !label_.isEmpty()) {
    const QFontMetricsF fm(small_font(7.5));
    const QSizeF sz(fm.horizontalAdvance(label_) + 4, fm.height());
    label_rect_ = QRectF(geo.label_pos - QPointF(sz.width() / 2, sz.height() / 2), sz);
    bounds_ = bounds_.united(label_rect_);
    hit_.addRect(label_rect_);
  }
  setToolTip(tensor_ + (label_.isEmpty() ? QString() : "\n" + label_));
}

void EdgeItem::paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget*) {
  const double lod = o->levelOfDetailFromTransform(p->worldTransform());
  const QColor c = isSelected() ? QColor(0x10, 0x60, 0xff) : QColor(0x55, 0x5d, 0x66);
  p->setPen(QPen(c, isSelected() ? 2.2 : 1.1));
  p->setBrush(Qt::NoBrush);
  p->drawPath(path_);
  if (!arrow_.isEmpty()) {
    p->setPen(Qt::NoPen);
    p->setBrush(c);
    p->drawPolygon(arrow_);
  }
  if (lod < kEdgeLabelLod || label_rect_.isNull()) return;
  p->setPen(Qt::NoPen);
  p->setBrush(QColor(255, 255, 255, 210));
  p->drawRect(label_rect_);
  p->setPen(isSelected() ? c : QColor(0x30, 0x40, 0x60));
  p->setFont(small_font(7.5));
  p->drawText(label_rect_, Qt::AlignCenter, label_);
}

ClusterItem::ClusterItem(const QString& scope, const QRectF& r) : scope_(scope), rect_(r) {
  setZValue(0);
  setToolTip(scope + "\ndouble-click the frame to collapse");
}

bool ClusterItem::in_title(const QPointF& scene_pos) const {
  const QPointF q = mapFromScene(scene_pos);
  return rect_.contains(q) && q.y() - rect_.top() < 22;
}

void ClusterItem::paint(QPainter* p, const QStyleOptionGraphicsItem* o, QWidget*) {
  const double lod = o->levelOfDetailFromTransform(p->worldTransform());
  p->setPen(QPen(QColor(0x9a, 0xa8, 0xc0), 1, Qt::DashLine));
  p->setBrush(QColor(0x5d, 0x6d, 0x8a, 12));  // nested frames add up
  p->drawRoundedRect(rect_, 6, 6);
  if (lod < kTextLod * 0.6) return;
  p->setPen(QColor(0x4a, 0x58, 0x70));
  p->setFont(small_font(9));
  const int k = scope_.lastIndexOf('/');
  p->drawText(rect_.adjusted(6, 2, -6, 0), Qt::AlignLeft | Qt::AlignTop, k < 0 ? scope_ : scope_.mid(k + 1));
}

}  // namespace onnxscope::viewer::graph
