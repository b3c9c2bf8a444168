// The GUI's plugins: one PluginSet per process, filled from
// ONNXSCOPE_PLUGIN_PATH at start and from the Plugins menu (Load plugin...,
// then one entry per loaded plugin with its kernels).
#pragma once

#include <QMenu>
#include <QStringList>
#include <functional>

#include "onnxscope/plugin.h"

namespace onnxscope::viewer {

// The plugins of this GUI process. Models load with them (LoadOptions::plugins);
// every engine make_engine() builds gets their kernels (set_default_plugin_kernels).
const PluginSet& gui_plugins();

// Loads one plugin into gui_plugins(); the error message ("FILE: ...") or "".
QString load_gui_plugin(const QString& path);
// Loads every ONNXSCOPE_PLUGIN_PATH entry; one message per failure.
QStringList load_gui_plugins_from_env();

class PluginsMenu : public QMenu {
  Q_OBJECT
 public:
  // `busy` says when loading a plugin must wait (a model load in flight reads
  // the plugin set from a worker thread).
  explicit PluginsMenu(QWidget* parent, std::function<bool()> busy = {});
  // Loads a plugin as Load plugin... does, without the file dialog; false
  // (after showing why, unless quiet) when it does not load.
  bool load(const QString& path, bool quiet = false);
  // Rebuilds the list of loaded plugins.
  void refresh();
  const QString& last_error() const { return last_error_; }

 signals:
  // A plugin was loaded: reload the model so its nodes validate and run.
  void plugins_changed();

 private:
  void choose_file();
  std::function<bool()> busy_;
  QAction* load_action_;
  QString last_error_;
  QStringList env_errors_;  // ONNXSCOPE_PLUGIN_PATH entries that did not load
};

}  // namespace onnxscope::viewer
