# mgcv's magic (GCV) on one fit, with every score evaluation and decision printed: the C
# routine rebuilt with prints (magic_trace.py builds it) and called as gam.fit calls it.
# Usage: Rscript magic_trace.R TRACED_SO TRAIN_CSV FORMULA
#   (TRAIN_CSV: the fit's rows; FORMULA: the model as R writes it)
# Prints TRACE lines (init, each trial step, convergence test, derivatives, the last check
# for optima at infinity) and RESULT, and how far the result is from gam()'s.
suppressMessages(library(mgcv))
args <- commandArgs(TRUE)
dyn.load(args[1])
train <- read.csv(args[2])
formula <- as.formula(args[3])
code <- deparse(mgcv:::magic)
code <- sub(".C(C_magic,", ".C(\"magic\", PACKAGE = \"mgcv_traced\",", code, fixed = TRUE)
traced <- eval(parse(text = code)); environment(traced) <- asNamespace("mgcv")
G <- gam(formula, data = train, method = "GCV.Cp", fit = FALSE)
ctrl <- gam.control()
mr <- traced(G$y, G$X, G$sp, G$S, G$off, L = G$L, lsp0 = G$lsp0, G$rank, G$H,
             matrix(0, 0, ncol(G$X)), rep(1, length(G$y)), gamma = 1, -1, TRUE,
             ridge.parameter = ctrl$irls.reg,
             control = list(tol = ctrl$mgcv.tol, step.half = ctrl$mgcv.half,
                            rank.tol = ctrl$rank.tol),
             n.score = length(G$y), nthreads = 1)
m <- gam(formula, data = train, method = "GCV.Cp")
apart <- c(max(abs(log(mr$sp) - log(m$sp))), abs(mr$score - m$gcv.ubre))
cat(sprintf("GAM the traced magic against gam(): log sp %.3g apart, score %.3g\n", apart[1], apart[2]))
if (apart[1] > 1e-8) stop("the traced magic does not reproduce gam()'s fit")
cat(sprintf("RESULT score %.17g rank %d iterations %d log_sp %s\n", mr$score,
            mr$gcv.info$rank, mr$gcv.info$iter, paste(sprintf("%.17g", log(mr$sp)), collapse = " ")))
