#include "onnxscope/viewer/plugins_menu.h"

#include <QFileDialog>
#include <QMessageBox>
#include <cstdio>

namespace onnxscope::viewer {

namespace {
PluginSet& plugins() {
  static PluginSet set;
  return set;
}
}  // namespace

const PluginSet& gui_plugins() { return plugins(); }

QString load_gui_plugin(const QString& path) {
  try {
    plugins().load(path.toStdString());
  } catch (const Error& e) {
    return QString::fromStdString(e.what());
  }
  // Every engine the GUI makes from now on (debugger, inspector, conformance) runs them.
  set_default_plugin_kernels(&plugins().kernels());
  return {};
}

QStringList load_gui_plugins_from_env() {
  QStringList errors;
  for (const auto& p : plugin_paths_from_env())
    if (QString e = load_gui_plugin(QString::fromStdString(p)); !e.isEmpty()) errors << e;
  return errors;
}

PluginsMenu::PluginsMenu(QWidget* parent, std::function<bool()> busy) : QMenu("&Plugins", parent), busy_(std::move(busy)) {
  load_action_ = new QAction("&Load plugin...", this);
  connect(load_action_, &QAction::triggered, this, &PluginsMenu::choose_file);
  connect(this, &QMenu::aboutToShow, this, [this] { load_action_->setEnabled(!busy_ || !busy_()); });
  // ONNXSCOPE_PLUGIN_PATH is read once per process, when the first menu is made.
  static const QStringList env_errors = [] {
    QStringList errors = load_gui_plugins_from_env();
    for (const QString& e : errors) std::fprintf(stderr, "onnxscope-gui: %s\n", qPrintable(e));
    return errors;
  }();
  env_errors_ = env_errors;
  refresh();
}

void PluginsMenu::choose_file() {
  const QString path =
      QFileDialog::getOpenFileName(this, "Load plugin", {}, "Plugin libraries (*.so *.dylib *.dll);;All files (*)");
  if (!path.isEmpty()) load(path);
}

bool PluginsMenu::load(const QString& path, bool quiet) {
  if (busy_ && busy_()) {
    last_error_ = path + ": a model is loading; load the plugin when it is done";
  } else {
    last_error_ = load_gui_plugin(path);
  }
  if (!last_error_.isEmpty()) {
    if (!quiet) QMessageBox::warning(parentWidget(), "Plugin not loaded", last_error_);
    return false;
  }
  refresh();
  emit plugins_changed();
  return true;
}

void PluginsMenu::refresh() {
  // Not clear(): it would delete load_action_ too (the menu owns it).
  for (QAction* a : actions()) {
    if (a == load_action_) continue;
    removeAction(a);
    if (QMenu* sub = a->menu(); sub && sub->parent() == this) delete sub;
    else if (a->parent() == this) delete a;
  }
  if (!actions().contains(load_action_)) addAction(load_action_);
  addSeparator();
  for (const QString& e : env_errors_) addAction("ONNXSCOPE_PLUGIN_PATH: " + e)->setEnabled(false);
  if (gui_plugins().empty()) {
    addAction("(no plugins loaded)")->setEnabled(false);
    return;
  }
  for (const auto& p : gui_plugins().plugins()) {
    QMenu* sub = addMenu(QString::fromStdString(p.name + (p.version.empty() ? "" : " " + p.version)));
    sub->setToolTip(QString::fromStdString(p.path));
    sub->addAction(QString::fromStdString(p.path))->setEnabled(false);
    for (const auto& k : p.kernels) {
      std::string line = std::string(domain_display_name(k.domain)) + "::" + k.op_type;
      if (!k.description.empty()) line += "  " + k.description;
      sub->addAction(QString::fromStdString(line))->setEnabled(false);
    }
  }
}

}  // namespace onnxscope::viewer
