// Reference kernel: ImageDecoder (JPEG, PNG, WebP, TIFF, JPEG 2000, BMP, PNM).
//
//
// Choices the spec leaves open, made as Pillow (onnx's reference) does:
// grayscale is the ITU-R 601 luma of the decoded RGB, rounded in 16-bit
// fixed point; alpha channels are dropped; grayscale images are expanded to
// three equal channels for RGB/BGR. Sample values are used as stored (no gamma
// or colour-profile conversion). As the spec says, an image that cannot be
// decoded gives an empty [0, 0, C] output.
#include <algorithm>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <jerror.h>
#include <openjpeg.h>
#include <png.h>
#include <tiffio.h>
#include <webp/decode.h>

#include "reference/kernel_util.h"
#include "reference/ops/kernels.h"

namespace onnxscope::ref {

namespace {

// A decoded image: 8-bit RGB, row-major, 3 bytes a pixel.
struct Image {
  uint64_t width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

// Largest pixel count a decoder may allocate (set from max_tensor_bytes).
struct Limits {
  uint64_t max_pixels = 0;
  bool allows(uint64_t w, uint64_t h) const { return w > 0 && h > 0 && w <= max_pixels / h; }
};

struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
};
void jpeg_fail(j_common_ptr c) { std::longjmp(reinterpret_cast<JpegError*>(c->err)->jump, 1); }
// Warnings that mean the entropy-coded data is truncated or corrupt fail the
// decode (libjpeg would fill in grey); other warnings are ignored.
void jpeg_warning(j_common_ptr c, int level) {
  const int code = c->err->msg_code;
  if (level < 0 && (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER || code == JWRN_HUFF_BAD_CODE)) jpeg_fail(c);
}

// No C++ object with a destructor is created between setjmp and the last
// libjpeg call (longjmp would skip it): `img` and `row` live in the caller's scope.
bool decode_jpeg_into(const uint8_t* data, size_t size, const Limits& lim, Image& img, std::vector<uint8_t>& row) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_warning;
  jpeg_create_decompress(&cinfo);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  if (jpeg_read_header(&cinfo, TRUE) != JPEG_HEADER_OK) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  if (!lim.allows(cinfo.image_width, cinfo.image_height)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_start_decompress(&cinfo);
  img.width = cinfo.output_width;
  img.height = cinfo.output_height;
  img.rgb.assign(img.width * img.height * 3, 0);
  row.assign(static_cast<size_t>(cinfo.output_width) * static_cast<size_t>(cinfo.output_components), 0);
  while (cinfo.output_scanline < cinfo.output_height) {
    const uint64_t y = cinfo.output_scanline;
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&cinfo, rows, 1);
    uint8_t* out = img.rgb.data() + y * img.width * 3;
    for (uint64_t x = 0; x < img.width; ++x) {
      if (cmyk) {
        // Adobe writes inverted CMYK: each stored value is 255 - ink.
        const uint8_t* p = row.data() + x * 4;
        for (int c = 0; c < 3; ++c) out[x * 3 + c] = static_cast<uint8_t>((p[c] * p[3] + 127) / 255);
      } else {
        std::memcpy(out + x * 3, row.data() + x * 3, 3);
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

bool decode_jpeg(const uint8_t* data, size_t size, const Limits& lim, Image& img) {
  std::vector<uint8_t> row;
  return decode_jpeg_into(data, size, lim, img, row);
}

struct PngReader {
  const uint8_t* data;
  size_t size, pos;
};
void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->size - r->pos) png_error(png, "truncated");
  std::memcpy(out, r->data + r->pos, n);
  r->pos += n;
}

void png_quiet_error(png_structp png, png_const_charp) { png_longjmp(png, 1); }
void png_quiet_warning(png_structp, png_const_charp) {}

bool decode_png_into(const uint8_t* data, size_t size, const Limits& lim, Image& img, std::vector<png_bytep>& rows) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, png_quiet_error, png_quiet_warning);
  if (png == nullptr) return false;
  png_infop info = png_create_info_struct(png);
  if (info == nullptr) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return false;
  }
  PngReader reader{data, size, 0};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  png_set_read_fn(png, &reader, png_read_memory);
  png_read_info(png, info);
  const png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
  if (!lim.allows(w, h)) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  // Everything to 8-bit RGB: expand palettes and low bit depths, drop alpha.
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * 3) {
    png_destroy_read_struct(&png, &info, nullptr);
    return false;
  }
  img.width = w;
  img.height = h;
  img.rgb.assign(img.width * img.height * 3, 0);
  rows.resize(h);
  for (png_uint_32 y = 0; y < h; ++y) rows[y] = img.rgb.data() + static_cast<size_t>(y) * w * 3;
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

bool decode_png(const uint8_t* data, size_t size, const Limits& lim, Image& img) {
  std::vector<png_bytep> rows;
  return decode_png_into(data, size, lim, img, rows);
}

bool decode_webp(const uint8_t* data, size_t size, const Limits& lim, Image& img) {
  int w = 0, h = 0;
  if (!WebPGetInfo(data, size, &w, &h) || !lim.allows(static_cast<uint64_t>(w), static_cast<uint64_t>(h))) return false;
  uint8_t* pixels = WebPDecodeRGB(data, size, &w, &h);
  if (pixels == nullptr) return false;
  img.width = static_cast<uint64_t>(w);
  img.height = static_cast<uint64_t>(h);
  img.rgb.assign(pixels, pixels + img.width * img.height * 3);
  WebPFree(pixels);
  return true;
}

struct TiffReader {
  const uint8_t* data;
  uint64_t size, pos;
};
tmsize_t tiff_read(thandle_t h, void* buf, tmsize_t n) {
  auto* r = static_cast<TiffReader*>(h);
  if (n <= 0 || r->pos >= r->size) return 0;
  const uint64_t k = std::min<uint64_t>(static_cast<uint64_t>(n), r->size - r->pos);
  std::memcpy(buf, r->data + r->pos, k);
  r->pos += k;
  return static_cast<tmsize_t>(k);
}

tmsize_t tiff_write(thandle_t, void*, tmsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* r = static_cast<TiffReader*>(h);
  uint64_t base = whence == SEEK_CUR ? r->pos : whence == SEEK_END ? r->size : 0;
  r->pos = base + off;
  return r->pos;
}

int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffReader*>(h)->size; }
int tiff_map(thandle_t, void**, toff_t*) { return 0; }
void tiff_unmap(thandle_t, void*, toff_t) {}
int tiff_quiet(TIFF*, void*, const char*, const char*, va_list) { return 1; }

bool decode_tiff(const uint8_t* data, size_t size, const Limits& lim, Image& img) {
  TiffReader reader{data, size, 0};
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_quiet, nullptr);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_quiet, nullptr);
  TIFF* tif = TIFFClientOpenExt("memory", "rm", &reader, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size,
                                tiff_map, tiff_unmap, opts);
  TIFFOpenOptionsFree(opts);
  if (tif == nullptr) return false;
  uint32_t w = 0, h = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &w);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &h);
  bool ok = lim.allows(w, h);
  std::vector<uint32_t> raster;
  if (ok) {
    raster.resize(static_cast<size_t>(w) * h);
    ok = TIFFReadRGBAImageOriented(tif, w, h, raster.data(), ORIENTATION_TOPLEFT, 1) != 0;
  }
  TIFFClose(tif);
  if (!ok) return false;
  img.width = w;
  img.height = h;
  img.rgb.resize(raster.size() * 3);
  for (size_t i = 0; i < raster.size(); ++i) {
    img.rgb[i * 3 + 0] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    img.rgb[i * 3 + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    img.rgb[i * 3 + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  return true;
}

struct OpjReader {
  const uint8_t* data;
  uint64_t size, pos;
};
OPJ_SIZE_T opj_read(void* buf, OPJ_SIZE_T n, void* user) {
  auto* r = static_cast<OpjReader*>(user);
  if (r->pos >= r->size) return static_cast<OPJ_SIZE_T>(-1);
  const uint64_t k = std::min<uint64_t>(n, r->size - r->pos);
  std::memcpy(buf, r->data + r->pos, k);
  r->pos += k;
  return static_cast<OPJ_SIZE_T>(k);
}

OPJ_OFF_T opj_skip(OPJ_OFF_T n, void* user) {
  auto* r = static_cast<OpjReader*>(user);
  const auto left = static_cast<OPJ_OFF_T>(r->size - r->pos);
  if (n > left) n = left;
  if (n < -static_cast<OPJ_OFF_T>(r->pos)) n = -static_cast<OPJ_OFF_T>(r->pos);
  r->pos = static_cast<uint64_t>(static_cast<OPJ_OFF_T>(r->pos) + n);
  return n;
}

OPJ_BOOL opj_seek(OPJ_OFF_T n, void* user) {
  auto* r = static_cast<OpjReader*>(user);
  if (n < 0 || static_cast<uint64_t>(n) > r->size) return OPJ_FALSE;
  r->pos = static_cast<uint64_t>(n);
  return OPJ_TRUE;
}

void opj_quiet(const char*, void*) {}

bool decode_jpeg2000(const uint8_t* data, size_t size, bool jp2_box, const Limits& lim, Image& img) {
  OpjReader reader{data, size, 0};
  opj_stream_t* stream = opj_stream_default_create(OPJ_TRUE);
  opj_stream_set_read_function(stream, opj_read);
  opj_stream_set_skip_function(stream, opj_skip);
  opj_stream_set_seek_function(stream, opj_seek);
  opj_stream_set_user_data(stream, &reader, nullptr);
  opj_stream_set_user_data_length(stream, size);
  opj_codec_t* codec = opj_create_decompress(jp2_box ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_set_error_handler(codec, opj_quiet, nullptr);
  opj_set_warning_handler(codec, opj_quiet, nullptr);
  opj_set_info_handler(codec, opj_quiet, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  opj_image_t* image = nullptr;
  bool ok = opj_setup_decoder(codec, &params) && opj_read_header(stream, codec, &image);
  if (ok) ok = lim.allows(image->x1 - image->x0, image->y1 - image->y0);
  if (ok) ok = opj_decode(codec, stream, image) && opj_end_decompress(codec, stream);
  if (ok) ok = image->numcomps >= 1;
  if (ok) {
    const uint64_t w = image->x1 - image->x0, h = image->y1 - image->y0;
    const bool gray = image->numcomps < 3;
    for (uint32_t c = 0; ok && c < (gray ? 1u : 3u); ++c) {
      const opj_image_comp_t& comp = image->comps[c];
      if (comp.data == nullptr || comp.dx == 0 || comp.dy == 0 || comp.prec == 0 || comp.prec > 31) ok = false;
    }
    if (ok) {
      img.width = w;
      img.height = h;
      img.rgb.assign(w * h * 3, 0);
      for (uint32_t c = 0; c < 3; ++c) {
        const opj_image_comp_t& comp = image->comps[gray ? 0 : c];
        const int64_t offset = comp.sgnd ? (int64_t{1} << (comp.prec - 1)) : 0;
        const int shift = comp.prec > 8 ? static_cast<int>(comp.prec) - 8 : 0;
        const int64_t max_in = (int64_t{1} << comp.prec) - 1;
        for (uint64_t y = 0; y < h; ++y) {
          for (uint64_t x = 0; x < w; ++x) {
            const uint64_t cx = std::min<uint64_t>(x / comp.dx, comp.w - 1), cy = std::min<uint64_t>(y / comp.dy, comp.h - 1);
            int64_t v = comp.data[cy * comp.w + cx] + offset;
            v = std::clamp<int64_t>(v, 0, max_in);
            // Scale to 8 bits: drop extra low bits, or stretch a shallower range.
            v = comp.prec >= 8 ? v >> shift : (v * 255 + max_in / 2) / max_in;
            img.rgb[(y * w + x) * 3 + c] = static_cast<uint8_t>(v);
          }
        }
      }
    }
  }
  if (image != nullptr) opj_image_destroy(image);
  opj_destroy_codec(codec);
  opj_stream_destroy(stream);
  return ok;
}

uint32_t le16(const uint8_t* p) { return p[0] | (p[1] << 8); }
uint32_t le32(const uint8_t* p) { return p[0] | (p[1] << 8) | (p[2] << 16) | (static_cast<uint32_t>(p[3]) << 24); }

// Value of the bits under `mask` scaled to 8 bits.
uint8_t masked_channel(uint32_t v, uint32_t mask) {
  if (mask == 0) return 0;
  int shift = 0;
  while (((mask >> shift) & 1u) == 0) ++shift;
  const uint32_t max = mask >> shift;
  return static_cast<uint8_t>((static_cast<uint64_t>((v & mask) >> shift) * 255 + max / 2) / max);
}

// Uncompressed (BI_RGB) and BI_BITFIELDS images of 1, 4, 8, 16, 24 and 32 bits.
bool decode_bmp(const uint8_t* d, size_t size, const Limits& lim, Image& img) {
  if (size < 26 || d[0] != 'B' || d[1] != 'M') return false;
  const uint64_t pixel_offset = le32(d + 10);
  const uint32_t header = le32(d + 14);
  int64_t w = 0, h = 0;
  uint32_t bpp = 0, compression = 0, colors = 0;
  bool core = header == 12;
  if (core) {
    w = le16(d + 18);
    h = static_cast<int16_t>(le16(d + 20));
    bpp = le16(d + 24);
  } else {
    if (header < 40 || size < 14 + 40) return false;
    w = static_cast<int32_t>(le32(d + 18));
    h = static_cast<int32_t>(le32(d + 22));
    bpp = le16(d + 28);
    compression = le32(d + 30);
    colors = le32(d + 46);
  }
  const bool top_down = h < 0;
  if (top_down) h = -h;
  if (w <= 0 || !lim.allows(static_cast<uint64_t>(w), static_cast<uint64_t>(h))) return false;
  if (compression != 0 && compression != 3) return false;  // RLE, JPEG-in-BMP, PNG-in-BMP: unsupported
  // Channel masks: BI_BITFIELDS gives them (in a v4/v5 header or right after a v1 header).
  uint32_t masks[3] = {0x00FF0000u, 0x0000FF00u, 0x000000FFu};
  if (bpp == 16) masks[0] = 0x7C00u, masks[1] = 0x03E0u, masks[2] = 0x001Fu;
  size_t palette_at = 14 + header;
  if (compression == 3) {
    if (bpp != 16 && bpp != 32) return false;
    if (size < 14 + 40 + 12) return false;
    for (int c = 0; c < 3; ++c) masks[c] = le32(d + 54 + 4 * c);
    if (header == 40) palette_at += 12;
  }
  std::vector<uint8_t> palette;  // RGB triples
  if (bpp <= 8) {
    if (bpp != 1 && bpp != 4 && bpp != 8) return false;
    const uint32_t n = colors != 0 && colors <= (1u << bpp) ? colors : (1u << bpp);
    const size_t entry = core ? 3 : 4;
    if (palette_at + n * entry > size) return false;
    palette.resize((size_t{1} << bpp) * 3, 0);
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t* e = d + palette_at + i * entry;
      palette[i * 3 + 0] = e[2];
      palette[i * 3 + 1] = e[1];
      palette[i * 3 + 2] = e[0];
    }
  } else if (bpp != 16 && bpp != 24 && bpp != 32) {
    return false;
  }
  const uint64_t stride = (static_cast<uint64_t>(w) * bpp + 31) / 32 * 4;
  if (pixel_offset > size || stride * static_cast<uint64_t>(h) > size - pixel_offset) return false;
  img.width = static_cast<uint64_t>(w);
  img.height = static_cast<uint64_t>(h);
  img.rgb.assign(img.width * img.height * 3, 0);
  for (uint64_t y = 0; y < img.height; ++y) {
    const uint8_t* row = d + pixel_offset + (top_down ? y : img.height - 1 - y) * stride;
    uint8_t* out = img.rgb.data() + y * img.width * 3;
    for (uint64_t x = 0; x < img.width; ++x) {
      if (bpp <= 8) {
        const uint64_t bit = x * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        std::memcpy(out + x * 3, palette.data() + idx * 3, 3);
      } else if (bpp == 24 || (bpp == 32 && compression == 0)) {
        const uint8_t* p = row + x * (bpp / 8);
        out[x * 3 + 0] = p[2];
        out[x * 3 + 1] = p[1];
        out[x * 3 + 2] = p[0];
      } else {
        const uint32_t v = bpp == 16 ? le16(row + x * 2) : le32(row + x * 4);
        for (int c = 0; c < 3; ++c) out[x * 3 + c] = masked_channel(v, masks[c]);
      }
    }
  }
  return true;
}

bool decode_pnm(const uint8_t* d, size_t size, const Limits& lim, Image& img) {
  if (size < 3 || d[0] != 'P' || d[1] < '1' || d[1] > '6') return false;
  const int kind = d[1] - '0';
  size_t pos = 2;
  // Next unsigned decimal of the header or the plain-text raster, skipping whitespace and # comments.
  auto number = [&](uint64_t& v) {
    while (pos < size) {
      if (d[pos] == '#') {
        while (pos < size && d[pos] != '\n' && d[pos] != '\r') ++pos;
      } else if (d[pos] == ' ' || d[pos] == '\t' || d[pos] == '\n' || d[pos] == '\r' || d[pos] == '\v' || d[pos] == '\f') {
        ++pos;
      } else {
        break;
      }
    }
    if (pos >= size || d[pos] < '0' || d[pos] > '9') return false;
    v = 0;
    while (pos < size && d[pos] >= '0' && d[pos] <= '9') {
      v = v * 10 + static_cast<uint64_t>(d[pos++] - '0');
      if (v > (uint64_t{1} << 32)) return false;
    }
    return true;
  };
  uint64_t w = 0, h = 0, maxval = 1;
  if (!number(w) || !number(h)) return false;
  const bool bitmap = kind == 1 || kind == 4;
  if (!bitmap && (!number(maxval) || maxval == 0 || maxval > 65535)) return false;
  if (!lim.allows(w, h)) return false;
  const bool binary = kind >= 4;
  if (binary) ++pos;  // the single whitespace before the raster
  const int channels = kind == 3 || kind == 6 ? 3 : 1;
  img.width = w;
  img.height = h;
  img.rgb.assign(w * h * 3, 0);
  const uint64_t sample_bytes = maxval > 255 ? 2 : 1;
  const uint64_t bitmap_stride = (w + 7) / 8;
  if (binary) {
    const uint64_t need = bitmap ? bitmap_stride * h : w * h * channels * sample_bytes;
    if (pos > size || need > size - pos) return false;
  }
  for (uint64_t y = 0; y < h; ++y) {
    for (uint64_t x = 0; x < w; ++x) {
      uint8_t px[3];
      for (int c = 0; c < channels; ++c) {
        uint64_t v = 0;
        if (bitmap) {
          if (binary) {
            v = (d[pos + y * bitmap_stride + x / 8] >> (7 - x % 8)) & 1u;
          } else {
            // Plain PBM: single 0/1 digits, separators optional.
            while (pos < size && d[pos] != '0' && d[pos] != '1') {
              if (d[pos] == '#') { while (pos < size && d[pos] != '\n') ++pos; } else { ++pos; }
            }
            if (pos >= size) return false;
            v = static_cast<uint64_t>(d[pos++] - '0');
          }
          px[c] = v != 0 ? 0 : 255;  // 1 is black
          continue;
        }
        if (binary) {
          const uint8_t* p = d + pos + ((y * w + x) * channels + static_cast<uint64_t>(c)) * sample_bytes;
          v = sample_bytes == 2 ? (static_cast<uint64_t>(p[0]) << 8 | p[1]) : p[0];
        } else if (!number(v)) {
          return false;
        }
        if (v > maxval) v = maxval;
        px[c] = static_cast<uint8_t>(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
      }
      uint8_t* out = img.rgb.data() + (y * w + x) * 3;
      for (int c = 0; c < 3; ++c) out[c] = px[channels == 3 ? c : 0];
    }
  }
  return true;
}

bool starts_with(const uint8_t* d, size_t size, const char* magic, size_t n, size_t at = 0) {
  return size >= at + n && std::memcmp(d + at, magic, n) == 0;
}

bool decode_any(const uint8_t* d, size_t size, const Limits& lim, Image& img) {
  if (starts_with(d, size, "\xFF\xD8\xFF", 3)) return decode_jpeg(d, size, lim, img);
  if (starts_with(d, size, "\x89PNG\r\n\x1A\n", 8)) return decode_png(d, size, lim, img);
  if (starts_with(d, size, "RIFF", 4) && starts_with(d, size, "WEBP", 4, 8)) return decode_webp(d, size, lim, img);
  if (starts_with(d, size, "II*\0", 4) || starts_with(d, size, "MM\0*", 4)) return decode_tiff(d, size, lim, img);
  if (starts_with(d, size, "\0\0\0\x0CjP  \r\n\x87\n", 12)) return decode_jpeg2000(d, size, true, lim, img);
  if (starts_with(d, size, "\xFF\x4F\xFF\x51", 4)) return decode_jpeg2000(d, size, false, lim, img);
  if (starts_with(d, size, "BM", 2)) return decode_bmp(d, size, lim, img);
  if (size >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return decode_pnm(d, size, lim, img);
  return false;
}

}  // namespace

void ImageDecoder(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.dtype() != DataType::Uint8) ctx.fail("encoded_stream must be uint8, got " + std::string(dtype_name(x.dtype())));
  if (x.rank() != 1) ctx.fail("encoded_stream must be 1-D, got " + shape_to_string(x.shape()));
  const std::string format = ctx.attr_string("pixel_format", "RGB");
  if (format != "RGB" && format != "BGR" && format != "Grayscale")
    ctx.fail("pixel_format must be RGB, BGR or Grayscale, got '" + format + "'");
  const int64_t channels = format == "Grayscale" ? 1 : 3;
  const bool rgb = format == "RGB", bgr = format == "BGR";

  Image img;
  const Limits lim{ctx.max_tensor_bytes() / 3};
  const auto* data = reinterpret_cast<const uint8_t*>(x.raw());
  if (x.element_count() == 0 || !decode_any(data, x.element_count(), lim, img)) {
    ctx.allocate_output(0, DataType::Uint8, {0, 0, channels});  // undecodable: empty, as the spec says
    return;
  }
  Tensor& y = ctx.allocate_output(0, DataType::Uint8, {static_cast<int64_t>(img.height), static_cast<int64_t>(img.width), channels});
  uint8_t* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  const uint64_t pixels = img.width * img.height;
  for (uint64_t i = 0; i < pixels; ++i) {
    const uint8_t* p = img.rgb.data() + i * 3;
    if (rgb) {
      std::memcpy(out + i * 3, p, 3);
    } else if (bgr) {
      out[i * 3 + 0] = p[2];
      out[i * 3 + 1] = p[1];
      out[i * 3 + 2] = p[0];
    } else {
      // ITU-R 601-2 luma in 16-bit fixed point, rounded (Pillow's "L" conversion).
      out[i] = static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
    }
  }
}

}  // namespace onnxscope::ref
