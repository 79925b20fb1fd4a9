# Reference for ppl_widget's GAM ΔLL: Wilcox et al. (TACL 2023)'s link regressions
# (analysis/analysis_link.Rmd) fitted with mgcv on MECO's xlang data, per held-out row.
# Usage: Rscript xlang_link.R DATA_DIR OUT_DIR LANGS MODELS [METHOD [PERMUTE]]
#   (LANGS, MODELS comma-separated; METHOD gam()'s method, default GCV.Cp; PERMUTE a seed:
#   each fold's training rows are shuffled with it first, to measure R's own spread)
# Writes OUT_DIR/ll.csv (per row and fold: log-density of the baseline, linear and
# non-linear model), OUT_DIR/edf.csv (per fold and smooth term), OUT_DIR/fits.csv (per
# fit: the criterion's score, rank, iterations and log smoothing parameters, to see which
# folds land where) and OUT_DIR/time.txt (seconds spent in the fits and predictions,
# measured inside R: elapsed, then CPU).
suppressMessages(library(mgcv))
args <- commandArgs(TRUE)
data_dir <- args[1]; out_dir <- args[2]
langs <- strsplit(args[3], ",")[[1]]; models <- strsplit(args[4], ",")[[1]]
method <- if (length(args) >= 5) args[5] else "GCV.Cp"
permute <- if (length(args) >= 6) as.integer(args[6]) else NA
formulas <- list(
  baseline = gaze_rt ~ te(freq, len, bs = 'cr') + te(prev_freq, prev_len, bs = 'cr'),
  linear = gaze_rt ~ surp + prev_surp + te(freq, len, bs = 'cr') + te(prev_freq, prev_len, bs = 'cr'),
  nonlinear = gaze_rt ~ s(surp, bs = 'cr', k = 6) + s(prev_surp, bs = 'cr', k = 6) +
    te(freq, len, bs = 'cr') + te(prev_freq, prev_len, bs = 'cr'))
ll_rows <- list(); edf_rows <- list(); fit_rows <- list(); seconds <- 0; cpu <- 0
for (lang in langs) {
  all <- read.csv(file.path(data_dir, paste0(lang, ".csv")))
  for (model in models) {
    df <- all[all$model == model, ]
    df <- df[is.finite(df$freq) & df$freq > 0 & is.finite(df$prev_freq) & df$prev_freq > 0 &
             is.finite(df$prev2_freq) & df$prev2_freq > 0, ]
    fold <- cut(seq(1, nrow(df)), breaks = 10, labels = FALSE)
    out <- data.frame(lang = lang, model = model, row = rownames(df), fold = fold)
    for (name in names(formulas)) {
      ll <- numeric(nrow(df))
      for (k in 1:10) {
        train <- df[fold != k, ]; test <- df[fold == k, ]
        if (!is.na(permute)) { set.seed(permute + k); train <- train[sample(nrow(train)), ] }
        t0 <- proc.time()
        m <- gam(formulas[[name]], data = train, method = method)
        ll[fold == k] <- log(dnorm(test$gaze_rt, mean = predict(m, newdata = test),
                                   sd = sigma(m)))
        t1 <- proc.time()
        seconds <- seconds + t1[["elapsed"]] - t0[["elapsed"]]
        cpu <- cpu + t1[["user.self"]] + t1[["sys.self"]] - t0[["user.self"]] - t0[["sys.self"]]
        {
          e <- summary(m)$edf
          labels <- sapply(m$smooth, function(s) s$label)
          edf_rows[[length(edf_rows) + 1]] <- data.frame(
            lang = lang, model = model, formula = name, fold = k, term = labels, edf = e)
          fit_rows[[length(fit_rows) + 1]] <- data.frame(
            lang = lang, model = model, formula = name, fold = k, score = m$gcv.ubre,
            rank = m$rank, iterations = if (method == "GCV.Cp") m$mgcv.conv$iter else m$outer.info$iter,
            log_sp = paste(sprintf("%.17g", log(m$sp)), collapse = " "))
        }
      }
      out[[name]] <- ll
    }
    ll_rows[[length(ll_rows) + 1]] <- out
  }
}
write.csv(do.call(rbind, ll_rows), file.path(out_dir, "ll.csv"), row.names = FALSE)
write.csv(do.call(rbind, edf_rows), file.path(out_dir, "edf.csv"), row.names = FALSE)
write.csv(do.call(rbind, fit_rows), file.path(out_dir, "fits.csv"), row.names = FALSE)
writeLines(format(c(seconds, cpu), digits = 6), file.path(out_dir, "time.txt"))
