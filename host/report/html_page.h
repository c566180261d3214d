// A self-contained HTML page (one file, no scripts, no network requests) with fabemu's report style:
// sections, summary numbers, tables and charts drawn as inline SVG (bars, stacked bars, heatmaps).
// `fabemu trace analyze --html` builds one; `fabemu run --html` is meant to build its page the same way.
// Every chart is an <svg class="chart" data-points="N"> whose N marks (<rect class="point">) carry a
// <title> tooltip with their value, so a test can count what is drawn.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fabemu::report {

// Text made safe for HTML element content and attribute values.
std::string html_escape(std::string_view text);

struct BarChart {
  std::string title;
  std::vector<std::string> labels;  // one per bar (e.g. "rank 3")
  std::vector<double> values;
  std::string unit;                 // shown in tooltips and on the axis, e.g. "bytes"
  std::vector<size_t> highlight;    // bars drawn in the warning colour
};

struct StackedBarChart {
  std::string title;
  std::vector<std::string> labels;  // one per bar
  std::vector<std::pair<std::string, std::vector<double>>> series;  // name, one value per bar; stacked in order
  std::string unit;
};

struct Heatmap {
  std::string title;
  std::vector<std::string> row_labels;  // e.g. senders
  std::vector<std::string> col_labels;  // e.g. receivers
  std::vector<std::vector<double>> values;  // [row][col]; 0 = no mark
  std::string row_axis, col_axis, unit;
  // Cells of this width and height in pixels (e.g. a wide time axis); 0: square cells that fit ~640 px.
  double cell_width = 0, cell_height = 0;
};

struct TableRow {
  std::vector<std::string> cells;
  bool highlight = false;  // drawn in the warning colour
};

class HtmlPage {
 public:
  explicit HtmlPage(std::string title);

  void section(std::string_view heading);
  void paragraph(std::string_view text);
  // "name: value" pairs shown as a row of tiles (the summary numbers).
  void numbers(const std::vector<std::pair<std::string, std::string>>& items);
  void table(const std::vector<std::string>& header, const std::vector<TableRow>& rows);
  void bar_chart(const BarChart& chart);
  void stacked_bars(const StackedBarChart& chart);
  void heatmap(const Heatmap& chart);

  // The whole document.
  std::string html() const;

 private:
  std::string title_;
  std::string body_;
};

// "1.5 GiB", "640 KiB", "12 B": for axes and tooltips.
std::string human_bytes(double bytes);

}  // namespace fabemu::report
