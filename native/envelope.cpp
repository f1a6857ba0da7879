// upper_envelopes (envelope.h): per sentence, lines sorted by slope, then the convex-hull stack.
#include "envelope.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace fstdecode {

namespace {

// Where line j (steeper) overtakes line i.
double crossing(const double* a, const double* b, std::int64_t i, std::int64_t j) {
  return (a[i] - a[j]) / (b[j] - b[i]);
}

}  // namespace

Envelopes upper_envelopes(const double* a, const double* b, const std::int64_t* offsets, std::size_t sentences) {
  Envelopes out;
  std::vector<std::int64_t> order, hull;
  std::vector<double> starts;  // starts[k]: where hull[k] takes over (k >= 1)
  for (std::size_t s = 0; s < sentences; ++s) {
    const std::int64_t lo = offsets[s], hi = offsets[s + 1];
    if (hi < lo) throw std::invalid_argument("upper_envelopes: offsets decrease");
    if (hi == lo) continue;
    order.resize(static_cast<std::size_t>(hi - lo));
    std::iota(order.begin(), order.end(), lo);
    // by slope, then the highest first, then the first entry (argmax's pick among equals)
    std::sort(order.begin(), order.end(), [&](std::int64_t i, std::int64_t j) {
      if (b[i] != b[j]) return b[i] < b[j];
      if (a[i] != a[j]) return a[i] > a[j];
      return i < j;
    });
    hull.clear();
    starts.clear();
    for (std::size_t k = 0; k < order.size(); ++k) {
      const std::int64_t l = order[k];
      if (k > 0 && b[l] == b[order[k - 1]]) continue;  // below the line of its slope before it
      double x = 0.0;
      while (!hull.empty()) {
        x = crossing(a, b, hull.back(), l);
        if (hull.size() >= 2 && x <= starts.back()) {  // the top line is never above both
          hull.pop_back();
          starts.pop_back();
          continue;
        }
        break;
      }
      if (!hull.empty()) starts.push_back(x);
      hull.push_back(l);
    }
    out.first.push_back(hull.front());
    for (std::size_t k = 1; k < hull.size(); ++k) {
      out.x.push_back(starts[k - 1]);
      out.from.push_back(hull[k - 1]);
      out.to.push_back(hull[k]);
    }
  }
  return out;
}

}  // namespace fstdecode
