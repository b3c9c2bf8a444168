#include "onnxscope/viewer/gui_engines.h"

#include <QCoreApplication>
#include <mutex>

#include "onnxscope/isolation.h"
#include "onnxscope/plugin.h"
#include "onnxscope/viewer/plugins_menu.h"

namespace onnxscope::viewer {

namespace {
std::mutex g_mu;
std::optional<std::filesystem::path> g_worker;  // nullopt: not decided yet
}  // namespace

void set_engine_worker(std::filesystem::path worker) {
  std::lock_guard lock(g_mu);
  g_worker = std::move(worker);
}

std::filesystem::path engine_worker() {
  std::lock_guard lock(g_mu);
  if (!g_worker) {
    const QString app = QCoreApplication::instance() ? QCoreApplication::applicationFilePath() : QString();
    g_worker = find_worker(app.isEmpty() ? std::filesystem::path() : std::filesystem::path(app.toStdString()));
  }
  return *g_worker;
}

std::unique_ptr<Engine> make_gui_engine(const std::string& name) {
  const std::filesystem::path worker = engine_worker();
  if (worker.empty()) return make_engine(name);  // picks up the GUI's plugins as default kernels
  IsolationOptions o;
  o.worker = worker;
  for (const PluginInfo& p : gui_plugins().plugins()) o.plugins.push_back(p.path);
  return make_isolated_engine(name, EngineSettings{}, std::move(o));
}

}  // namespace onnxscope::viewer
